"""Typed results that library code hands the CLI (a run's summary, its progress): dataclasses whose
fields, in order, are the keys the command writes. kxtx.cli.output renders them through `to_dict`,
so the JSON keeps the order and the values the fields have."""

from __future__ import annotations

import dataclasses
from typing import Any

#: The metadata of a field left out of `to_dict` while it is empty (produce's "errors", "message").
OMIT_EMPTY = {"omit_empty": True}


def written_as(name: str) -> dict[str, str]:
    """The metadata of a field written under another key (dump partition's "from", a keyword)."""
    return {"key": name}


class Result:
    """The base of a typed result (a `@dataclass(frozen=True, slots=True)` subclass)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The fields in their order (under the key `written_as` gives, if any), nested results as
        dicts; an empty OMIT_EMPTY field left out."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]  # every subclass is a dataclass
            value = getattr(self, f.name)
            if f.metadata.get("omit_empty") and not value:
                continue
            out[f.metadata.get("key", f.name)] = plain(value)
        return out


def plain(value: Any) -> Any:
    """`value` with its results (and lists of them) as dicts; anything else as it is."""
    if isinstance(value, Result):
        return value.to_dict()
    if isinstance(value, list) and value and isinstance(value[0], Result):
        return [plain(v) for v in value]
    return value
