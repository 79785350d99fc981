"""The Protobuf codec of one schema, from its FileDescriptorProto (the registry's
`format=serialized`), and `.proto` text compiled as a registry would (for registries that serve only
text). Part of `codecs` (`codecs.codec` makes one), a module of its own for its size.
"""

from __future__ import annotations

import base64
from typing import Any

from kxtx.schemas.mismatch import Mismatch


class ProtobufCodec:
    """From the schema's FileDescriptorProto (the registry's `format=serialized`, base64): message
    classes built at run time, no generated code and no protoc."""

    kind = "PROTOBUF"

    def __init__(
        self, serialized: str, references: dict[str, str] | None = None, message: str | None = None
    ) -> None:
        from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

        self._json = json_format
        pool = descriptor_pool.DescriptorPool()
        default = descriptor_pool.Default()

        def add(fdp: Any) -> None:
            for dep in fdp.dependency:
                try:
                    pool.FindFileByName(dep)
                    continue
                except KeyError:
                    pass
                if references and dep in references:
                    add(_fdp(references[dep], dep))
                    continue
                try:  # google/protobuf/timestamp.proto and the other well-known types
                    if dep.startswith("google/protobuf/") and dep.endswith(".proto"):
                        import importlib

                        try:  # loading the generated module adds the file to the default pool
                            importlib.import_module("google.protobuf." + dep[16:-6] + "_pb2")
                        except ImportError:
                            pass
                    known = default.FindFileByName(dep)
                except KeyError:
                    raise Mismatch(
                        f"Protobuf schema imports {dep!r}, which is neither a reference nor well known"
                    ) from None
                proto = descriptor_pb2.FileDescriptorProto()
                known.CopyToProto(proto)
                add(proto)
            pool.Add(fdp)

        def _fdp(text: str, name: str) -> Any:
            proto = descriptor_pb2.FileDescriptorProto()
            try:
                proto.ParseFromString(base64.b64decode(text))
            except Exception as exc:  # noqa: BLE001
                raise Mismatch(
                    f"Protobuf schema {name}: not a serialized FileDescriptorProto: {exc}"
                ) from None
            return proto

        fdp = _fdp(serialized, "(schema)")
        add(fdp)
        self.file = pool.FindFileByName(fdp.name)
        names = list(self.file.message_types_by_name)
        if not names:
            raise Mismatch("the Protobuf schema defines no message")
        self.message_name = message or names[0]
        if self.message_name not in self.file.message_types_by_name:
            raise Mismatch(
                f"the Protobuf schema has no message {self.message_name!r} (it has {', '.join(names)})"
            )
        self.index = names.index(self.message_name)
        desc = self.file.message_types_by_name[self.message_name]
        self.name = desc.full_name
        self._cls = message_factory.GetMessageClass(desc)
        self._classes: dict[tuple[int, ...], Any] = {(self.index,): self._cls}

    @property
    def indexes(self) -> list[int]:
        return [self.index]

    def encode(self, obj: Any) -> bytes:
        msg = self._cls()
        try:
            self._json.ParseDict(obj, msg)
        except (self._json.ParseError, TypeError, ValueError) as exc:
            raise Mismatch(_proto_message(str(exc))) from None
        return msg.SerializeToString()

    def decode(self, payload: bytes, indexes: list[int] | None = None) -> Any:
        cls = self._class(indexes or [0])
        try:
            msg = cls.FromString(payload)
        except Exception as exc:  # noqa: BLE001 - DecodeError
            raise Mismatch(f"not a Protobuf {cls.DESCRIPTOR.full_name}: {exc}") from None
        return self._python(msg)

    def _python(self, msg: Any) -> Any:
        """A message as Python objects: 64-bit integers stay integers (the Protobuf JSON mapping
        turns them into strings), every field is there, enums by name, the well-known types
        (Timestamp, Struct, ...) as their JSON mapping. A field without explicit presence (a plain
        proto3 scalar) that is unset is its default, as the wire cannot tell them apart; one with
        presence (a message, a proto3 `optional`, a oneof member) that is unset is None, which
        `encode` leaves unset (json_format clears a field given None): a pass through keeps
        HasField as it was."""
        desc = msg.DESCRIPTOR
        if desc.full_name.startswith("google.protobuf."):
            return self._json.MessageToDict(msg, preserving_proto_field_name=True)
        out: dict[str, Any] = {}
        for f in desc.fields:
            value = getattr(msg, f.name)
            if f.message_type is not None and f.message_type.GetOptions().map_entry:
                vf = f.message_type.fields_by_name["value"]
                out[f.name] = {k: self._scalar(vf, v) for k, v in value.items()}
            elif _repeated(f):
                out[f.name] = [self._scalar(f, v) for v in value]
            elif _has_presence(f) and not msg.HasField(f.name):
                out[f.name] = None
            else:
                out[f.name] = self._scalar(f, value)
        return out

    def _scalar(self, f: Any, value: Any) -> Any:
        if f.message_type is not None:
            return self._python(value)
        if f.enum_type is not None:
            ev = f.enum_type.values_by_number.get(value)
            return ev.name if ev is not None else value
        return value

    def _class(self, indexes: list[int]) -> Any:
        key = tuple(indexes)
        cls = self._classes.get(key)
        if cls is None:
            from google.protobuf import message_factory

            try:
                desc = self.file.message_types_by_name[list(self.file.message_types_by_name)[indexes[0]]]
                for i in indexes[1:]:
                    desc = desc.nested_types[i]
            except (IndexError, KeyError):
                raise Mismatch(f"message indexes {indexes}: no such message in the schema") from None
            cls = self._classes[key] = message_factory.GetMessageClass(desc)
        return cls

    def fields(self) -> dict[str, Any] | None:
        return {f.name: f.type for f in self._cls.DESCRIPTOR.fields}


def compile_proto(text: str, references: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """A .proto file's text (and its imports' texts by import name) compiled as a registry's
    `format=serialized` would give them: (the file's FileDescriptorProto, base64; the imports'
    likewise). For registries that serve only the text (Apicurio's Confluent API); needs protoc
    as a library, grpcio-tools."""
    import os
    import tempfile

    try:
        from grpc_tools import protoc
    except ImportError:
        raise Mismatch(
            "this registry gives Protobuf schemas only as .proto text; compiling them needs "
            "grpcio-tools (pip install grpcio-tools)"
        ) from None
    from google.protobuf import descriptor_pb2

    with tempfile.TemporaryDirectory(prefix="kxtx-proto-") as tmp:
        files = {"kxtx_schema.proto": text, **(references or {})}
        for name, body in files.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(body)
        out = os.path.join(tmp, "out.pb")
        import importlib.resources

        include = str(importlib.resources.files("grpc_tools") / "_proto")
        args = ["protoc", f"-I{tmp}", f"-I{include}", f"--descriptor_set_out={out}", "--include_imports"]
        if protoc.main([*args, "kxtx_schema.proto"]) != 0:
            raise Mismatch("the Protobuf schema does not compile (protoc's message is above)")
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    by_name = {fd.name: base64.b64encode(fd.SerializeToString()).decode() for fd in fds.file}
    main = by_name.pop("kxtx_schema.proto")
    return main, {k: v for k, v in by_name.items() if not k.startswith("google/protobuf/")}


def _repeated(f: Any) -> bool:
    flag = getattr(f, "is_repeated", None)  # protobuf >= 5.28; `label` is deprecated there
    return bool(flag) if flag is not None else f.label == f.LABEL_REPEATED


def _has_presence(f: Any) -> bool:
    flag = getattr(f, "has_presence", None)  # protobuf >= 4.21
    if flag is not None:
        return bool(flag)
    # a proto3 `optional` is in a (synthetic) oneof of its own
    return f.message_type is not None or f.containing_oneof is not None


def _proto_message(text: str) -> str:
    # json_format: 'Failed to parse id field: invalid literal for int() ...' / 'Message type
    # "shop.Order" has no field named "x" at "Order".'
    if text.startswith("Failed to parse ") and " field: " in text:
        field, _, why = text[len("Failed to parse ") :].partition(" field: ")
        return f"field {field}: {why}"
    return text
