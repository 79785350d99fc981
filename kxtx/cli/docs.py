"""Generate the command reference (docs/commands.md) and static shell completions from the app itself.

Static completions need no Python start-up per TAB press. `scripts/gen_docs.py` writes the files;
tests/unit/test_cli_frame.py fails when they drift from the app.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer.main

if TYPE_CHECKING:
    import click

#: Where the reference lives, relative to the repository root (the README links to it).
REFERENCE = "docs/commands.md"


@dataclass
class Opt:
    names: list[str]
    help: str
    metavar: str
    choices: list[str]
    is_flag: bool
    default: str | None
    #: what the shell completes as the value: the choices, else the words of a `a|b|c:X` metavar
    values: list[str] = field(default_factory=list)


@dataclass
class Cmd:
    path: list[str]
    help: str
    options: list[Opt] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    children: list[Cmd] = field(default_factory=list)


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").strip().split("\n\n")[0].split())


def _choices(param: click.Parameter) -> list[str]:
    import enum
    import typing

    ann = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    for cand in (ann, *typing.get_args(ann)):
        if isinstance(cand, type) and issubclass(cand, enum.Enum):
            return [m.value for m in cand]
    return list(getattr(getattr(param, "type", None), "choices", None) or [])


def _metavar_values(metavar: str | None) -> list[str]:
    """`jsonl|csv|lines` -> those words; `fail|skip|dlq:TOPIC` -> fail, skip, dlq: (the user types
    the topic). A metavar without `|` (FILE, KEY=VALUE) names no values."""
    from kxtx.cli.common import complete_words

    if not metavar or "|" not in metavar:
        return []
    return complete_words(metavar)("")


def _walk(command: click.Command, path: list[str]) -> Cmd:
    cmd = Cmd(path, _first_paragraph(command.help))
    for p in command.params:
        if getattr(p, "hidden", False) or p.name in ("install_completion", "show_completion"):
            continue
        if not p.opts or not p.opts[0].startswith("-"):
            cmd.arguments.append((p.metavar or p.name).upper())
            continue
        choices = _choices(p)
        default = None if p.is_flag or p.default in (None, [], ()) or callable(p.default) else str(p.default)
        values = [str(c) for c in choices] or _metavar_values(p.metavar)
        cmd.options.append(
            Opt(
                [*p.opts, *p.secondary_opts],
                _first_paragraph(p.help),
                p.metavar or "",
                [str(c) for c in choices],
                bool(p.is_flag),
                default,
                values,
            )
        )
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        cmd.children.append(_walk(sub, [*path, name]))
    return cmd


def tree() -> Cmd:
    from kxtx.cli.app import app

    return _walk(typer.main.get_command(app), ["kxtx"])


def _leaves(cmd: Cmd) -> Iterator[Cmd]:
    yield cmd
    for c in cmd.children:
        yield from _leaves(c)


# --- command reference ------------------------------------------------------------------------------
def reference_markdown() -> str:
    """docs/commands.md: every command and subcommand with its usage, subcommands and options."""
    out = [
        "# Command reference",
        "",
        "Every `kxtx` command and option, generated from the CLI by `python scripts/gen_docs.py` (do not",
        "edit by hand; a test fails when it drifts). The [README](../README.md) explains the commands with",
        "examples; `kxtx COMMAND --help` shows the same text in the terminal.",
        "",
    ]
    for cmd in _leaves(tree()):
        args = " ".join(cmd.arguments)
        sub = " COMMAND" if cmd.children else ""
        out.append(f"## `{' '.join(cmd.path)}`\n")
        out.append(f"{cmd.help}\n")
        out.append(f"Usage: `{' '.join(cmd.path)} [OPTIONS]{sub}{(' ' + args) if args else ''}`\n")
        if cmd.children:
            out.append("| command | what it does |\n|---|---|")
            out.extend(f"| `{c.path[-1]}` | {c.help} |" for c in cmd.children)
            out.append("")
        if cmd.options:
            out.append("| option | meaning |\n|---|---|")
            for o in cmd.options:
                names = ", ".join(f"`{n}`" for n in o.names)
                extra = f" One of: {', '.join(o.choices)}." if o.choices else ""
                dflt = f" Default: `{o.default}`." if o.default and not o.choices else ""
                out.append(f"| {names} | {o.help.replace('|', '/')}{extra}{dflt} |")
            out.append("")
    return "\n".join(out)


# --- completions ------------------------------------------------------------------------------------
def _table() -> list[tuple[str, list[str], Cmd]]:
    """(path-key, words) for every command path: subcommands + options."""
    rows = []
    for cmd in _leaves(tree()):
        words = [c.path[-1] for c in cmd.children] + [n for o in cmd.options for n in o.names]
        rows.append((" ".join(cmd.path[1:]), words, cmd))
    return rows


def bash() -> str:
    cases, choices = [], {}
    for key, words, cmd in _table():
        cases.append(f'        "{key}") words="{" ".join(words)}" ;;')
        for o in cmd.options:
            if o.values:
                for n in o.names:
                    choices[n] = " ".join(o.values)
    choice_cases = "\n".join(
        f'        {n}) COMPREPLY=($(compgen -W "{c}" -- "$cur")); return ;;'
        for n, c in sorted(choices.items())
    )
    commands = " ".join(sorted({k.split(" ")[-1] for k, _, _ in _table() if k}))
    return f"""# bash completion for kxtx (generated by scripts/gen_docs.py; do not edit)
_kxtx() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" path="" w words=""
    case "$prev" in
{choice_cases}
    esac
    for w in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        case " {commands} " in *" $w "*) path="${{path:+$path }}$w" ;; esac
    done
    case "$path" in
{chr(10).join(cases)}
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _kxtx kxtx
"""


def zsh() -> str:
    return f"""#compdef kxtx
# zsh completion for kxtx (generated by scripts/gen_docs.py; do not edit)
autoload -U +X bashcompinit && bashcompinit
{bash().split(chr(10), 1)[1]}"""


def fish() -> str:
    lines = [
        "# fish completion for kxtx (generated by scripts/gen_docs.py; do not edit)",
        "complete -c kxtx -f",
    ]
    for key, _words, cmd in _table():
        parts = key.split(" ") if key else []
        cond = " ; and ".join(f"__fish_seen_subcommand_from {p}" for p in parts) or "__fish_use_subcommand"
        for child in cmd.children:
            desc = child.help.replace('"', "'")[:80]
            lines.append(f'complete -c kxtx -n "{cond}" -a {child.path[-1]} -d "{desc}"')
        for o in cmd.options:
            flags = " ".join(f"-l {n[2:]}" if n.startswith("--") else f"-s {n[1:]}" for n in o.names)
            args = f' -r -a "{" ".join(o.values)}"' if o.values else ("" if o.is_flag else " -r")
            desc = o.help.replace('"', "'")[:80]
            lines.append(f'complete -c kxtx -n "{cond}" {flags}{args} -d "{desc}"')
    return "\n".join(lines) + "\n"


#: File names as bash-completion (`kxtx.bash`), zsh (`_kxtx`, in $fpath) and fish look them up; the wheel
#: installs them under share/ (pyproject.toml [tool.setuptools.data-files]).
COMPLETIONS = {"kxtx.bash": bash, "_kxtx": zsh, "kxtx.fish": fish}
