"""Each command's option panels in `--help`, laid out so that nothing is cut at any width.

typer's own panels (rich tables whose columns all shrink together when the terminal is narrow) cut
long option names and long words of the help (`--max-transaction-tim…` at 80 columns). A command
built with `KxtxCommand` (kxtx.cli.app gives it to every command) lets typer print the usage, the
description and the arguments as before, then prints the option panels itself: one row per option
(names, type, help) when that fits with the help column at least as wide as its longest word, else
each option's names and type on a line with its help indented below. Names and types are never
shrunk; a word wider than the whole panel (none in kxtx) would be folded, never ellipsized.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from typer.core import TyperCommand

if TYPE_CHECKING:  # rich is imported when help is shown: not on every kxtx start
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

OPTIONS_PANEL = "Options"
#: the narrowest help column the one-row layout accepts (below it, the stacked one reads better)
MIN_HELP_WIDTH = 30
#: panel border and padding (2 + 2) around the rows
_FRAME = 4
_STACK_INDENT = 4


class KxtxCommand(TyperCommand):
    def format_help(self, ctx: Any, formatter: Any) -> None:
        from rich.console import Console
        from rich.padding import Padding
        from rich.text import Text

        options: list[Any] = [
            p for p in self.get_params(ctx) if _is_option(p) and not getattr(p, "hidden", False)
        ]
        epilog, self.epilog = self.epilog, None
        for p in options:  # typer prints all but these: usage, description, arguments
            p.hidden = True
        try:
            super().format_help(ctx, formatter)
        finally:
            for p in options:
                p.hidden = False
            self.epilog = epilog
        console = Console()
        for title, params in _panels(options).items():
            console.print(option_panel(title, [option_row(p, ctx) for p in params], console.width))
        if epilog:
            console.print(Padding(Text(epilog), 1))


def _is_option(param: Any) -> bool:
    return getattr(param, "param_type_name", None) == "option"


def _panels(options: list[Any]) -> dict[str, list[Any]]:
    """The options by panel: typer's "Options" first, then the others in order of appearance."""
    panels: dict[str, list[Any]] = {OPTIONS_PANEL: []}
    for p in options:
        panels.setdefault(getattr(p, "rich_help_panel", None) or OPTIONS_PANEL, []).append(p)
    return {k: v for k, v in panels.items() if v}


class Row:
    """One option as shown: long and short names, its type (metavar and range), its help and the
    extras after it ([env var: X], [default: X], [required]), each extra kept on one line."""

    def __init__(
        self, required: bool, long: str, short: str, kind: str, text: str, extras: list[tuple[str, str]]
    ) -> None:
        self.required, self.long, self.short, self.kind = required, long, short, kind
        self.text, self.extras = text, extras

    def units(self) -> list[str]:
        """What a line may not break: the help's words and each whole extra."""
        return [*self.text.split(), *(e for e, _ in self.extras)]

    def help(self, width: int) -> Text:
        """The help wrapped at `width` (never inside an extra), the extras styled as typer does."""
        import textwrap

        from rich.text import Text

        glued = " ".join([self.text, *(e.replace(" ", _GLUE) for e, _ in self.extras)]).strip()
        lines = textwrap.wrap(glued, max(width, 1), break_long_words=False, break_on_hyphens=False)
        text = Text("\n".join(lines).replace(_GLUE, " "), overflow="fold")
        for extra, style in self.extras:
            text.highlight_words([extra], style=style)
        return text


#: joins the words of an extra while the help is wrapped ([default: 50000] stays on one line)
_GLUE = "\x00"


def option_row(param: Any, ctx: Any) -> Row:
    names = [*param.opts, *param.secondary_opts]
    long = ",".join(n for n in names if n.startswith("--"))
    short = ",".join(n for n in names if not n.startswith("--"))
    kind = "" if param.is_flag else (param.make_metavar(ctx) or "")
    limits = _range(param.type)
    if limits:
        kind = f"{kind} [{limits}]".strip()
    extras: list[tuple[str, str]] = []
    if param.envvar and getattr(param, "show_envvar", False):
        envvar = param.envvar if isinstance(param.envvar, str) else ", ".join(param.envvar)
        extras.append((f"[env var: {envvar}]", "dim yellow"))
    default = default_text(param)
    if default:
        extras.append((f"[default: {default}]", "dim"))
    if param.required:
        extras.append(("[required]", "dim red"))
    # as written: kxtx's help has no rich markup ("[@]start:end" is syntax to show)
    return Row(bool(param.required), long, short, kind, " ".join((param.help or "").split()), extras)


def _range(kind: Any) -> str:
    """`1<=x<=9`, `x>=0.1`: an IntRange's or FloatRange's bounds, as click words them."""
    lo, hi = getattr(kind, "min", None), getattr(kind, "max", None)
    if lo is None and hi is None:
        return ""
    if lo is None:
        return f"x{'<' if kind.max_open else '<='}{hi}"
    if hi is None:
        return f"x{'>' if kind.min_open else '>='}{lo}"
    return f"{lo}{'<' if kind.min_open else '<='}x{'<' if kind.max_open else '<='}{hi}"


def default_text(param: Any) -> str:
    """The default as typer words it: `(TEXT)` for a show_default text, a flag pair's name
    (`no-x`), an enum's value, a list joined by commas, `(dynamic)` for a computed one; nothing for
    None, an empty list or a plain flag that is off."""
    if isinstance(param.show_default, str):
        return f"({param.show_default})"
    if param.show_default is False:
        return ""
    value = param.default
    if callable(value):
        return "(dynamic)"
    if param.is_flag and param.secondary_opts:
        return (param.opts if value else param.secondary_opts)[0].lstrip("-")
    if value is None or (value is False and param.is_flag):
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value)
    return _value(value)


def _value(value: Any) -> str:
    return str(value.value) if isinstance(value, enum.Enum) else str(value)


def _columns(rows: list[Row]) -> list[tuple[str, list[str]]]:
    """The fixed columns (style, cells) before the help: those with something in them."""
    cols = [
        ("red", ["*" if r.required else "" for r in rows]),
        ("bold cyan", [r.long for r in rows]),
        ("bold green", [r.short for r in rows]),
        ("bold yellow", [r.kind for r in rows]),
    ]
    return [(style, cells) for style, cells in cols if any(cells)]


def option_panel(title: str, rows: list[Row], width: int) -> Panel:
    from rich.console import RenderableType
    from rich.panel import Panel

    inner = width - _FRAME
    cols = _columns(rows)
    fixed = [max(map(len, cells)) for _, cells in cols]
    gaps = 2 * len(fixed)  # a space either side of the gap between two columns
    longest = max((len(u) for r in rows for u in r.units()), default=0)
    help_width = inner - sum(fixed) - gaps
    body: RenderableType
    if help_width >= max(longest, MIN_HELP_WIDTH):
        body = _one_row_each(rows, cols, help_width)
    else:
        body = _stacked(rows, inner - _STACK_INDENT)
    return Panel(body, border_style="dim", title=title, title_align="left")


def _one_row_each(rows: list[Row], cols: list[tuple[str, list[str]]], help_width: int) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=False, expand=True, box=None, padding=(0, 1), pad_edge=False)
    for style, _ in cols:
        table.add_column(no_wrap=True, style=style)
    table.add_column(ratio=1, overflow="fold")
    for i, r in enumerate(rows):  # Text, not str: a cell's "[x>=1]" is no markup tag
        table.add_row(*(Text(cells[i]) for _, cells in cols), r.help(help_width))
    return table


def _stacked(rows: list[Row], help_width: int) -> Group:
    from rich.console import Group, RenderableType
    from rich.padding import Padding
    from rich.text import Text

    parts: list[RenderableType] = []
    for r in rows:
        head = Text(overflow="fold")
        for text, style in (
            ("*" if r.required else "", "red"),
            (r.long, "bold cyan"),
            (r.short, "bold green"),
            (r.kind, "bold yellow"),
        ):
            if text:
                head.append(("  " if head.plain else "") + text, style=style)
        parts.append(head)
        parts.append(Padding(r.help(help_width), (0, 0, 0, _STACK_INDENT)))
    return Group(*parts)
