"""Schemas through a registry: which schema a run writes with (`Writer`), and the schema of each
record it reads (`Reader`), each looked up once and cached.

A `Writer` resolves its schema when it is made, before any transaction begins: a missing subject,
an unregistered file or an incompatible schema stops a run before it writes anything. Schemas are
registered only when asked (`register=True`, `--register`), never as a side effect. A `Reader`
holds only schema texts and the registry's settings, so it pickles (`kxtx pipe` ships it to Spark's
workers, each of which then fetches a schema id it has not seen once, not per record).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kxtx.client import registry as reg
from kxtx.errors import ConfigError, UsageError
from kxtx.schemas import codecs, framing, protocodec, protofile
from kxtx.schemas.codecs import Mismatch

STRATEGIES = ("topic", "record", "topic-record")


def check_strategy(strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise UsageError(f"--subject-strategy {strategy!r}: expected {', '.join(STRATEGIES)}")


_EXTENSIONS = {".avsc": codecs.AVRO, ".json": codecs.JSON, ".proto": codecs.PROTOBUF}


class UnknownSchema(LookupError):
    """A record framed with a schema id the registry does not know."""


@dataclass(frozen=True)
class SchemaChoice:
    """What `--value-schema` / `--key-schema` named: a file, or a subject's latest or Nth version,
    or a schema id."""

    option: str
    path: str | None = None
    kind: str | None = None
    version: int | str | None = None  # "latest" or a number
    schema_id: int | None = None
    #: the message of a .proto file (`FILE.proto:pkg.Message`); None: the file's first
    message: str | None = None

    def describe(self) -> str:
        if self.path:
            return self.path + (f":{self.message}" if self.message is not None else "")
        if self.schema_id is not None:
            return f"schema id {self.schema_id}"
        return f"version {self.version}"


def parse_choice(text: str, option: str) -> SchemaChoice:
    """`latest`, a version number, `id:N`, or a schema file (.avsc, .json JSON Schema, .proto, or
    `FILE.proto:pkg.Message` for another message than the file's first)."""
    text = text.strip()
    if text == "latest":
        return SchemaChoice(option, version="latest")
    if text.isdigit():
        return SchemaChoice(option, version=int(text))
    if text.startswith("id:") and text[3:].isdigit():
        return SchemaChoice(option, schema_id=int(text[3:]))
    path, message = protofile.split(text)
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXTENSIONS:
        raise UsageError(
            f"{option} {text!r}: expected latest, a version number, id:N, or a schema file "
            "(.avsc Avro, .json JSON Schema, .proto Protobuf, FILE.proto:pkg.Message)"
        )
    if message == "":
        raise UsageError(f"{option} {text}: name the message after the colon (FILE.proto:pkg.Message)")
    if not os.path.isfile(path):
        raise UsageError(f"{option} {path}: no such file")
    return SchemaChoice(option, path=path, kind=_EXTENSIONS[ext], message=message)


def subject_name(strategy: str, topic: str, is_key: bool, record: str | None) -> str:
    """The subject under the registry's naming strategies (TopicNameStrategy is the default)."""
    part = "key" if is_key else "value"
    if strategy == "topic":
        return f"{topic}-{part}"
    if not record:
        raise UsageError(f"--subject-strategy {strategy} needs a schema with a record name")
    return record if strategy == "record" else f"{topic}-{record}"


class _Registry:
    """A lazily made client (it does not pickle) with the lookups kxtx needs."""

    def __init__(self, cfg: reg.RegistryConfig) -> None:
        self.cfg = cfg
        self._client: Any = None

    def __getstate__(self) -> dict:
        return {"cfg": self.cfg, "_client": None, "_serialized": None}

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = reg.connect(self.cfg)
        return self._client

    def serialized(
        self, what: str, schema_id: int | None = None, subject: str | None = None, version: Any = None
    ) -> Any:
        """A schema in the registry's `format=serialized` (Protobuf: a base64 FileDescriptorProto;
        other types as they are), by id or by subject and version. A client of its own: the
        client's cache keys schemas by id alone, whatever format they were fetched in."""
        if getattr(self, "_serialized", None) is None:
            self._serialized = reg.connect(self.cfg)
        c = self._serialized
        if schema_id is not None:
            return self.call(what, c.get_schema, schema_id, None, "serialized")
        return self.call(what, c.get_version, subject, version, False, "serialized").schema

    def call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return reg.call(self.cfg, what, lambda: fn(*args, **kwargs))

    def references(self, refs: list | None) -> dict[str, str]:
        """name -> schema text of every schema `refs` names, references of references too."""
        out: dict[str, str] = {}
        for ref in refs or []:
            found = self.call(
                f"reference {ref.name} ({ref.subject} version {ref.version})",
                self.client.get_version,
                ref.subject,
                ref.version,
            )
            out[ref.name] = found.schema.schema_str
            out.update(self.references(found.schema.references))
        return out


class Writer:
    """Encodes objects with the one schema chosen for a topic's keys or values."""

    #: the schema's codec (kxtx.schemas.codecs), set by `_load`
    codec: Any

    def __init__(
        self,
        cfg: reg.RegistryConfig,
        choice: SchemaChoice,
        topic: str,
        is_key: bool = False,
        strategy: str = "topic",
        register: bool = False,
        subject: str | None = None,
    ) -> None:
        check_strategy(strategy)
        self.registry = _Registry(cfg)
        self.choice, self.topic, self.is_key = choice, topic, is_key
        self.register = register
        self.schema_id: int = -1
        self.version: int | None = None
        self.subject = ""
        #: the full name of the message of a .proto file chosen (None: the schema's first)
        self.message: str | None = None
        self._resolve(strategy, subject)
        head = framing.header(self.schema_id)
        if self.codec.kind == codecs.PROTOBUF:
            head += framing.message_indexes(self.codec.indexes)
        self._head = head

    def _resolve(self, strategy: str, subject: str | None) -> None:
        c, r = self.choice, self.registry
        client = r.client
        if c.path:
            self._resolve_file(c, strategy, subject)
            return
        if c.schema_id is not None:
            self.subject = subject or ""
            got = r.call(f"schema id {c.schema_id}", client.get_schema, c.schema_id)
            self.schema_id = c.schema_id
            self._load(got.schema_type, got.schema_str, got.references)
            if not self.subject:
                self.subject = subject_name("topic", self.topic, self.is_key, None)
            return
        if strategy != "topic" and not subject:
            raise UsageError(
                f"{c.option} {c.version}: name the subject (--subject-strategy {strategy} needs a schema file)"
            )
        self.subject = subject or subject_name("topic", self.topic, self.is_key, None)
        what = f"subject {self.subject} version {c.version}"
        try:
            if c.version == "latest":
                found = r.call(what, client.get_latest_version, self.subject)
            else:
                found = r.call(what, client.get_version, self.subject, c.version)
        except reg.RegistryError as exc:
            if exc.status == 404:
                raise ConfigError(
                    f"{c.option} {c.version}: schema registry {r.cfg.shown_url} has no {what} ({exc.args[0].rpartition(': ')[2]})"
                ) from None
            raise
        self.schema_id, self.version = found.schema_id, found.version
        self._load(found.schema.schema_type, found.schema.schema_str, found.schema.references)

    def _resolve_file(self, c: SchemaChoice, strategy: str, subject: str | None) -> None:
        """A schema file: registered under its subject with --register, else looked up there."""
        from confluent_kafka.schema_registry import Schema

        r = self.registry
        text = read_file(c)
        kind = c.kind or codecs.AVRO
        try:  # the file checked before the registry sees it
            record = codecs.codec(kind, text).name if kind != codecs.PROTOBUF else self._proto_message(text)
        except Mismatch as exc:
            raise ConfigError(f"{c.option} {c.describe()}: {exc}") from None
        self.subject = subject or subject_name(strategy, self.topic, self.is_key, record)
        schema = Schema(text, kind)
        what = f"looking up {c.path} under subject {self.subject}"
        if self.register:
            got = r.call(
                f"registering {c.path} under subject {self.subject}",
                r.client.register_schema_full_response,
                self.subject,
                schema,
            )
            self.schema_id, self.version = got.schema_id, got.version
            if self.schema_id is None or self.version is None:  # some registries answer with the id only
                found = r.call(what, r.client.lookup_schema, self.subject, schema)
                self.schema_id, self.version = found.schema_id, found.version
        else:
            try:
                found = r.call(what, r.client.lookup_schema, self.subject, schema)
            except reg.RegistryError as exc:
                if exc.status == 404:
                    raise ConfigError(
                        f"{c.option} {c.path}: not registered under subject {self.subject} in schema "
                        f"registry {r.cfg.shown_url}; pass --register to register it"
                    ) from None
                raise
            self.schema_id, self.version = found.schema_id, found.version
        self._load(kind, text, [])

    def _proto_message(self, text: str) -> str | None:
        """The full name of the .proto file's message chosen: before the registry sees the file, a
        name the file lacks is a usage error listing those it has."""
        c = self.choice
        self.message = protofile.choose(text, c.message)
        if self.message is None and c.message is not None:
            has = ", ".join(protofile.messages(text)) or "none"
            raise UsageError(f"{c.option} {c.describe()}: {c.path} has no message {c.message} (it has {has})")
        return self.message

    def _load(self, kind: str | None, text: str, refs: list) -> None:
        kind = (kind or codecs.AVRO).upper()
        try:
            if kind == codecs.PROTOBUF:  # compiled: by the registry where it can, else here
                text, references = _protobuf(self.registry, self.schema_id, text, refs)
            else:
                references = self.registry.references(refs)
            self._text, self._references = text, references
            self.codec = codecs.codec(kind, text, references, self._top_level())
        except Mismatch as exc:
            raise ConfigError(f"{self.choice.option} {self.choice.describe()}: {exc}") from None

    def _top_level(self) -> str | None:
        """The chosen message as the codec names a file's messages: without the package."""
        return self.message.rpartition(".")[2] if self.message else None

    def encode(self, obj: Any) -> bytes:
        """The framed record; Mismatch (naming the field) for an object the schema refuses."""
        return self._head + self.codec.encode(obj)

    def encoder(self) -> Encoder:
        """This writer's schema as an Encoder (pickles: for Spark's workers)."""
        return Encoder(
            self.schema_id, self.codec.kind, self._text, self._references, self._head, self._top_level()
        )

    def fields(self) -> dict[str, Any] | None:
        return self.codec.fields()

    def describe(self) -> dict[str, Any]:
        out = {
            "subject": self.subject,
            "version": self.version,
            "schema_id": self.schema_id,
            "type": self.codec.kind,
        }
        if self.codec.kind == codecs.PROTOBUF:  # a file of several messages: which one
            out["message"] = self.codec.name
        return out


def read_file(c: SchemaChoice) -> str:
    try:
        with open(c.path or "", encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{c.option} {c.path}: {getattr(exc, 'strerror', None) or exc}") from None


#: what a registry that cannot serve `format=serialized` answers (Apicurio's Confluent API: 400)
_NO_SERIALIZED = (400, 404, 415, 422)


def _protobuf(r: _Registry, schema_id: int, text: str, refs: list | None) -> tuple[str, dict[str, str]]:
    """A Protobuf schema compiled (base64 FileDescriptorProto) with its references: as the registry
    serves it (`format=serialized`, Confluent's and AxonOps'), else compiled here from its text."""
    try:
        got = r.serialized(f"schema id {schema_id}", schema_id)
        if _base64(got.schema_str):  # Apicurio answers with the raw bytes as text: not usable
            return got.schema_str, _serialized_references(r, got.references)
    except reg.RegistryError as exc:
        if exc.status not in _NO_SERIALIZED:
            raise
    try:
        return protocodec.compile_proto(text, r.references(refs))
    except Mismatch as exc:
        raise Mismatch(f"schema id {schema_id}: {exc}") from None


def _base64(text: str) -> bool:
    import base64
    import binascii

    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _serialized_references(r: _Registry, refs: list | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for ref in refs or []:
        found = r.serialized(
            f"reference {ref.name} ({ref.subject} version {ref.version})", None, ref.subject, ref.version
        )
        out[ref.name] = found.schema_str
        out.update(_serialized_references(r, found.references))
    return out


class Encoder:
    """A Writer's schema without its registry client: what `kxtx pipe` ships to Spark's workers to
    encode the UDF's results (it pickles; the codec is built once per worker process)."""

    def __init__(
        self,
        schema_id: int,
        kind: str,
        text: str,
        references: dict[str, str],
        head: bytes,
        message: str | None = None,
    ) -> None:
        self.schema_id, self.kind, self.text, self.references, self.head = (
            schema_id,
            kind,
            text,
            references,
            head,
        )
        #: a Protobuf file's top-level message encoded (None: its first)
        self.message = message
        self._codec: Any = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_codec": None}

    def encode_many(self, objs: list) -> list[bytes]:
        """Each object encoded and framed; Mismatch (a ValueError) if any does not fit, without
        saying which (`encode` each to find it)."""
        c = self._codec or self._load()
        if c.kind == codecs.AVRO:
            return c.encode_many(objs, self.head)
        return [self.head + c.encode(obj) for obj in objs]

    def _load(self) -> Any:
        self._codec = _process_codec(
            ("encode", self.schema_id, self.text, self.message),
            self.kind,
            self.text,
            self.references,
            self.message,
        )
        return self._codec

    def encode(self, obj: Any) -> bytes:
        c = self._codec or self._load()
        return self.head + c.encode(obj)


#: codecs built in this process, by schema: `kxtx pipe` unpickles its Reader and Encoder once per
#: Spark task, and a worker process runs many tasks. Hung off a module in sys.modules because
#: code Spark ships by value gets fresh module globals per task (kxtx.pipe.worker.task).
def _process_codecs() -> dict:
    import sys

    holder = sys.modules.get("kxtx_schema_codecs")
    if holder is None:
        import types

        holder = sys.modules["kxtx_schema_codecs"] = types.ModuleType("kxtx_schema_codecs")
        holder.codecs = {}  # type: ignore[attr-defined]
    return holder.codecs


def _process_codec(
    key: tuple, kind: str, text: str, references: dict[str, str], message: str | None = None
) -> Any:
    cache = _process_codecs()
    c = cache.get(key)
    if c is None:
        c = cache[key] = codecs.codec(kind, text, references, message)
    return c


class Decoded(NamedTuple):
    value: Any
    schema_id: int


@dataclass
class _Known:
    kind: str
    text: str
    references: dict[str, str]


@dataclass
class Reader:
    """Decodes framed records; each schema id is fetched once (per process: `_codecs` is not
    pickled, the texts are)."""

    cfg: reg.RegistryConfig
    #: the format the records must have (codecs.AVRO, ...), or None: whatever their schema says
    expect: str | None = None
    known: dict[int, _Known] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._registry = _Registry(self.cfg)
        self._codecs: dict[int, Any] = {}
        #: schema id -> the subjects it is registered under (for display)
        self._subjects: dict[int, list[str]] = {}

    def __getstate__(self) -> dict:
        return {"cfg": self.cfg, "expect": self.expect, "known": self.known}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def codec_of(self, schema_id: int) -> Any:
        c = self._codecs.get(schema_id)
        if c is not None:
            return c
        key = ("decode", self.cfg.url, schema_id)
        c = _process_codecs().get(key)
        if c is None:
            k = self.known.get(schema_id)
            if k is None:
                k = self.known[schema_id] = self._fetch(schema_id)
            try:
                c = _process_codec(key, k.kind, k.text, k.references)
            except Mismatch as exc:
                raise Mismatch(f"schema id {schema_id}: {exc}") from None
        if self.expect and c.kind != self.expect:
            raise Mismatch(f"schema id {schema_id} is {c.kind}, not {self.expect}")
        self._codecs[schema_id] = c
        return c

    def _fetch(self, schema_id: int) -> _Known:
        r = self._registry
        try:
            got = r.call(f"schema id {schema_id}", r.client.get_schema, schema_id)
        except reg.RegistryError as exc:
            if exc.status == 404:
                raise UnknownSchema(
                    f"schema id {schema_id} is not in schema registry {self.cfg.shown_url}"
                ) from None
            raise
        kind = (got.schema_type or codecs.AVRO).upper()
        if kind == codecs.PROTOBUF:
            return _Known(kind, *_protobuf(r, schema_id, got.schema_str, got.references))
        return _Known(kind, got.schema_str, r.references(got.references))

    def prefetch(self, values: Any) -> None:
        """Fetch every schema id of these framed values not known yet (the driver, before it ships
        a batch to Spark: the workers then need no registry). Values not framed are left to decode."""
        for v in values:
            if v is not None and len(v) >= framing.HEADER and v[0] == framing.MAGIC:
                sid = int.from_bytes(v[1 : framing.HEADER], "big")
                if sid not in self.known:
                    try:
                        self.known[sid] = self._fetch(sid)
                    except (UnknownSchema, Mismatch):
                        pass  # that record's decoding says so, on the worker

    def prefetch_subjects(self, subjects: list[str], newest: int = 5) -> None:
        """Fetch the schemas of the newest versions of these subjects (a pipe's input topics'
        `TOPIC-value`, before its tasks start): Spark's workers then decode the usual records
        without a registry client of their own, whose import and TLS set-up cost each worker
        process about half a second. Best effort: a subject the registry does not have (another
        naming strategy) or a registry that does not answer leaves the fetching to the workers,
        which report it."""
        r = self._registry
        for subject in subjects:
            try:
                versions = r.call(f"versions of subject {subject}", r.client.get_versions, subject)
                for version in sorted(versions)[-newest:]:
                    got = r.call(
                        f"subject {subject} version {version}", r.client.get_version, subject, version
                    )
                    if got.schema_id not in self.known:
                        self.known[got.schema_id] = self._fetch(got.schema_id)
            except (reg.RegistryError, reg.RegistryUnavailable, UnknownSchema, Mismatch):
                continue

    def decode_values(self, values: list) -> list:
        """The decoded values (None stays None), in one pass where every value is an Avro record
        framed with the same schema id (the usual batch); else ValueError, and `decode` each to
        find the one that fails."""
        first = values[0] if values else None
        if first is None or len(first) < framing.HEADER or first[0] != framing.MAGIC:
            raise ValueError("not one framed schema")
        head = first[: framing.HEADER]
        c = self.codec_of(int.from_bytes(head[1:], "big"))
        from operator import itemgetter

        try:  # each value's header, in C (a generator per value cost as much as the slices)
            heads = set(map(itemgetter(slice(framing.HEADER)), values))
        except TypeError:  # a tombstone (None)
            raise ValueError("not one framed schema") from None
        if c.kind != codecs.AVRO or heads != {head}:
            raise ValueError("not one Avro schema")
        # bytes slices, not memoryviews: making a memoryview per value cost more than the copy
        return c.decode_many(list(map(itemgetter(slice(framing.HEADER, None)), values)))

    def decode(self, data: bytes) -> Decoded:
        """framing.NotFramed, UnknownSchema or Mismatch for a record it cannot decode."""
        sid = framing.schema_id(data)
        c = self.codec_of(sid)
        if c.kind == codecs.PROTOBUF:
            indexes, pos = framing.read_message_indexes(data, framing.HEADER)
            return Decoded(c.decode(data[pos:], indexes), sid)
        return Decoded(c.decode(data[framing.HEADER :]), sid)

    def subjects(self, schema_id: int) -> list[str]:
        """The subjects a schema id is registered under (for display; [] if the registry cannot
        say), asked once per id."""
        found = self._subjects.get(schema_id)
        if found is None:
            r = self._registry
            try:
                found = list(
                    r.call(
                        f"subjects of schema id {schema_id}", r.client.get_subjects_by_schema_id, schema_id
                    )
                )
            except (reg.RegistryError, AttributeError):
                found = []
            self._subjects[schema_id] = found
        return found
