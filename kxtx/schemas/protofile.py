""".proto schema files as the command line names them: `FILE.proto` (its first message) or
`FILE.proto:pkg.Message` (the form the registry's own tools take), and the top-level messages
read from the file's text, without protoc (a run checks the name before the registry sees the
file). Pure."""

from __future__ import annotations

import re

#: string literals and comments, blanked before the braces are counted (a `{` may hide in either)
_NOISE = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)
_TOKENS = re.compile(r"\bmessage\s+(\w+)\s*\{|\{|\}")
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)


def split(text: str) -> tuple[str, str | None]:
    """`FILE.proto:pkg.Message` -> (`FILE.proto`, `pkg.Message`); anything else -> (text, None)."""
    path, sep, message = text.rpartition(":")
    if sep and path.lower().endswith(".proto"):
        return path, message
    return text, None


def messages(text: str) -> list[str]:
    """The full names (`pkg.Message`) of a .proto file's top-level messages, in the file's order
    (nested messages are not: the registry's message indexes name a top-level one first)."""
    clean = _NOISE.sub(" ", text)
    pkg = _PACKAGE.search(clean)
    prefix = pkg.group(1) + "." if pkg else ""
    names: list[str] = []
    depth = 0
    for m in _TOKENS.finditer(clean):
        if m.group(0) == "}":
            depth -= 1
            continue
        if m.group(1) and depth == 0:
            names.append(prefix + m.group(1))
        depth += 1
    return names


def choose(text: str, wanted: str | None) -> str | None:
    """The full name of the message `wanted` names (its full name, or its name alone), or of the
    file's first message when None; None when the file has no such message."""
    names = messages(text)
    if wanted is None:
        return names[0] if names else None
    wanted = wanted.lstrip(".")
    for full in names:
        if wanted in (full, full.rpartition(".")[2]):
            return full
    return None
