"""`kxtx produce --value-schema/--key-schema`: the writers that encode records with a registry's
schema, chosen once before the first transaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kxtx.client.settings import Settings


@dataclass(frozen=True)
class SchemaOptions:
    """As given on the command line: `value`/`key` are schema choices (kxtx.schemas.serde.parse_choice)."""

    value: str | None = None
    key: str | None = None
    strategy: str = "topic"
    register: bool = False

    @property
    def given(self) -> bool:
        return bool(self.value or self.key)

    def check(self, key_field: str | None) -> None:
        if not (self.given or self.register) and self.strategy == "topic":
            return  # nothing to check: a run without schemas does not import the registry code
        from kxtx.errors import UsageError
        from kxtx.schemas.serde import check_strategy, parse_choice

        check_strategy(self.strategy)
        if self.key and not key_field:
            raise UsageError("--key-schema needs a key: give --key-field")
        given = ((self.value, "--value-schema"), (self.key, "--key-schema"))
        choices = [parse_choice(text, option) for text, option in given if text]
        if self.register and not any(c.path for c in choices):
            raise UsageError("--register needs a schema file (--value-schema FILE or --key-schema FILE)")


class LocalWriter:
    """A dry run's stand-in for a registry Writer: the schema file's codec, framed with id 0 (a dry
    run connects to nothing, so it checks every record against the file, not the registry)."""

    def __init__(self, path: str, option: str) -> None:
        from kxtx.errors import UsageError
        from kxtx.schemas import codecs, framing
        from kxtx.schemas.serde import parse_choice, read_file

        choice = parse_choice(path, option)
        if choice.kind == codecs.PROTOBUF:
            raise UsageError(
                f"{option} {path}: a dry run cannot check Protobuf (the registry compiles .proto files)"
            )
        try:
            self.codec = codecs.codec(choice.kind or codecs.AVRO, read_file(choice))
        except codecs.Mismatch as exc:
            raise UsageError(f"{option} {path}: {exc}") from None
        self._head = framing.header(0)

    def encode(self, obj: Any) -> bytes:
        return self._head + self.codec.encode(obj)

    def fields(self) -> dict[str, Any] | None:
        return self.codec.fields()


def writers(opts: SchemaOptions, topic: str, settings: Settings | None) -> tuple[Any, Any]:
    """(value writer, key writer); None where no schema was asked for. `settings` None: a dry run."""
    from kxtx.schemas.serde import Writer, parse_choice

    out: list[Any] = []
    for text, option, is_key in ((opts.value, "--value-schema", False), (opts.key, "--key-schema", True)):
        if not text:
            out.append(None)
            continue
        choice = parse_choice(text, option)
        if settings is None:
            if not choice.path:
                from kxtx.errors import UsageError

                raise UsageError(
                    f"{option} {text}: a dry run checks against a schema file only (it connects to nothing)"
                )
            out.append(LocalWriter(text, option))
            continue
        cfg = settings.registry_config(option)
        out.append(Writer(cfg, choice, topic, is_key, opts.strategy, opts.register))
    return out[0], out[1]


def described(value: Any, key: Any) -> list[dict]:
    """The summary's `schemas`: which subject, version and id each part was written with."""
    return [dict(part=part, **w.describe()) for part, w in (("key", key), ("value", value)) if w is not None]
