"""`kxtx pipe` through a schema registry: the reader that decodes its input for the UDF
(`--value-format avro|protobuf|jsonschema|auto`) and the encoder of its output (`--out-schema`),
made on the driver before the first transaction and shipped to Spark's workers with the UDF."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kxtx.client.settings import Settings
    from kxtx.pipe.runconfig import RunConfig

#: --value-format words that decode through the registry
REGISTRY_FORMATS = ("avro", "protobuf", "jsonschema", "auto")


def serdes(cfg: RunConfig, settings: Settings) -> tuple[Any, Any]:
    """(reader or None, encoder or None). The output schema is resolved here (looked up, or
    registered with --register): a missing or incompatible one stops the run before it starts."""
    from kxtx.schemas import codecs
    from kxtx.schemas.serde import Reader, Writer, parse_choice

    reader = encoder = None
    if cfg.value_format in REGISTRY_FORMATS:
        expect = None if cfg.value_format == "auto" else codecs.FORMATS[cfg.value_format]
        reader = Reader(settings.registry_config(f"--value-format {cfg.value_format}"), expect)
    if cfg.out_schema:
        writer = Writer(
            settings.registry_config("--out-schema"),
            parse_choice(cfg.out_schema, "--out-schema"),
            cfg.out,
            False,
            cfg.subject_strategy,
            cfg.register,
        )
        encoder = writer.encoder()
        encoder.described = writer.describe()  # type: ignore[attr-defined]
    return reader, encoder
