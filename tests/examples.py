"""The examples the README, the pages under docs/ and every command's --help show, found the way a
reader finds them.

- README.md and docs/*.md (`pages()`): every line of a ```bash / ```sh / ```shell
  block, every `$ ` line of a ```console block, and every line starting with `kxtx` in an indented
  code block; the whole ```python block(s).
- --help: every `Example: kxtx ...` or `$ kxtx ...` line of a command's help text or epilog.

A line starting with `kxtx` is a *synopsis* (shown, not run) when it has option brackets, alternatives or
UPPERCASE placeholders (`kxtx fence TRANSACTIONAL_ID [--dry-run] [--yes]`); its indented
continuation lines starting with `[` belong to it. Comments (` # ...`) are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHELL_FENCES = {"bash", "sh", "shell", "console"}
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:[:.][A-Z][A-Z0-9_]*)*(?:\.\.\.)?$")


@dataclass(frozen=True)
class Example:
    source: str  # "README.md:LINE", "docs/pipe.md:LINE" or "kxtx pipe --help"
    text: str  # the command as shown, comment dropped
    synopsis: bool = False


def strip_comment(line: str) -> str:
    return re.split(r"\s+#\s", line.strip(), maxsplit=1)[0].strip()


def is_synopsis(text: str) -> bool:
    words = text.split()
    if words[:1] != ["kxtx"]:  # a shell line around kxtx (`eval "$(kxtx ...)"`) is run, not a synopsis
        return False
    return any(c in text for c in "[(|") or any(_PLACEHOLDER.match(w) for w in words[1:])


def pages() -> list[str]:
    """The pages whose examples are run: the README and every page under docs/ (the README links
    each), as paths from the repository root."""
    return ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]


def readme_examples(text: str | None = None, page: str = "README.md") -> tuple[list[Example], list[str]]:
    """(shell examples, python blocks) of one page: the README unless `page` names another."""
    text = text if text is not None else (ROOT / page).read_text()
    lines = text.splitlines()
    out: list[Example] = []
    python: list[str] = []
    fence: str | None = None
    block: list[str] = []
    prev_blank = True
    for no, raw in enumerate(lines, 1):
        if fence is not None:
            if raw.strip().startswith("```"):
                if fence == "python":
                    python.append("\n".join(block))
                fence, block = None, []
                continue
            if fence == "python":
                block.append(raw)
            elif fence in SHELL_FENCES:
                body = (
                    raw.strip()[2:]
                    if fence == "console" and raw.strip().startswith("$ ")
                    else (None if fence == "console" else raw)
                )
                cmd = strip_comment(body) if body is not None else ""
                if cmd and not raw.strip().startswith("#"):
                    out.append(Example(f"{page}:{no}", cmd, is_synopsis(cmd)))
            continue
        if raw.strip().startswith("```"):
            fence = raw.strip()[3:].strip().lower() or "text"
            continue
        if raw.startswith("    ") and (prev_blank or (out and out[-1].source.startswith(f"{page}:"))):
            stripped = raw.strip()
            if stripped.startswith("kxtx ") or stripped == "kxtx":
                cmd = strip_comment(stripped)
                out.append(Example(f"{page}:{no}", cmd, is_synopsis(cmd)))
            elif (
                stripped.startswith("[") and out and out[-1].synopsis and out[-1].source == f"{page}:{no - 1}"
            ):
                last = out.pop()  # a synopsis continued on the next line
                out.append(Example(f"{page}:{no}", f"{last.text} {strip_comment(stripped)}", True))
        prev_blank = not raw.strip()
    return out, python


def help_examples() -> list[Example]:
    import typer.main

    from kxtx.cli.app import app

    out: list[Example] = []

    def walk(cmd, path):
        for text in (cmd.help or "", getattr(cmd, "epilog", None) or ""):
            for line in text.splitlines():
                m = re.match(r"^\s*(?:Example:\s*|\$\s+)(kxtx\s.+)$", line)
                if m:
                    out.append(
                        Example(
                            f"{' '.join(path)} --help", strip_comment(m.group(1)), is_synopsis(m.group(1))
                        )
                    )
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), ["kxtx"])
    return out


def page_examples() -> tuple[list[Example], list[str]]:
    """(shell examples, python blocks) of every page (`pages()`), in their order."""
    shell: list[Example] = []
    python: list[str] = []
    for page in pages():
        found, blocks = readme_examples(page=page)
        shell += found
        python += blocks
    return shell, python


def python_blocks() -> list[str]:
    """The ```python blocks of every page."""
    return page_examples()[1]


def all_examples() -> list[Example]:
    return page_examples()[0] + help_examples()
