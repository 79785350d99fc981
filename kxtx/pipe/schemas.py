"""`kxtx pipe` through a schema registry: the reader that decodes its input for the UDF
(`--value-format avro|protobuf|jsonschema|auto`) and the encoder of its output (`--out-schema`),
made on the driver before the first transaction and shipped to Spark's workers with the UDF."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kxtx.client.settings import Settings
    from kxtx.pipe.runconfig import RunConfig
    from kxtx.pipe.udf import LoadedUdf


def declared(loaded: LoadedUdf) -> str | None:
    """The output schema a UDF declares (`enrich.out_schema = "enriched.avsc"`, what --out-schema
    takes), a relative file named from the UDF's own folder; None when it declares none."""
    import os

    value = getattr(loaded.func, "out_schema", None)
    if value is None:
        return None
    if not isinstance(value, (str, int)):
        from kxtx.errors import UsageError

        raise UsageError(f"{loaded.name}: out_schema must be a schema file name, latest, a version or id:N")
    text = str(value)
    if loaded.source is not None and not os.path.isabs(text):
        beside = os.path.join(os.path.dirname(str(loaded.source)), text)
        if os.path.isfile(beside):
            return beside
    return text


def serdes(cfg: RunConfig, settings: Settings, declared: str | None = None) -> tuple[Any, Any]:
    """(reader or None, encoder or None). The output schema (--out-schema, else the UDF's declared
    one) is resolved here, looked up or registered with --register: a missing or incompatible one
    stops the run before it starts."""
    from kxtx.schemas import codecs
    from kxtx.schemas.serde import Reader, Writer, parse_choice

    reader = encoder = None
    if cfg.value_format in codecs.REGISTRY_FORMATS:
        expect = None if cfg.value_format == "auto" else codecs.FORMATS[cfg.value_format]
        reader = Reader(settings.registry_config(f"--value-format {cfg.value_format}"), expect)
        reader.prefetch_subjects([f"{t}-value" for t in cfg.inputs if not t.startswith("^")])
    out_schema = cfg.out_schema or declared
    if out_schema:
        option = "--out-schema" if cfg.out_schema else "the UDF's out_schema"
        writer = Writer(
            settings.registry_config(option),
            parse_choice(out_schema, option),
            cfg.out,
            False,
            cfg.subject_strategy,
            cfg.register,
        )
        encoder = writer.encoder()
    return reader, encoder
