"""One connection-settings object for both client libraries.

Sources, lowest precedence first: the `--command-config` properties file (Java client names accepted),
then `KXTX_*` environment variables, then command-line flags (`-b`, `-X key=value`). The result is a
dict of librdkafka property names (as kcat's `-X`), from which both the confluent-kafka config and the
kafka-python `KafkaAdminClient` keyword arguments are derived.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kxtx.client import registry as regmod
from kxtx.client.kafkaerrors import FAILOVER_S
from kxtx.errors import ConfigError, KxtxError, UsageError
from kxtx.parsers import parse_properties, split_csv

DEFAULT_TIMEOUT_S = 30.0

#: Environment variables read as connection settings (documented in the README).
ENV_SETTINGS = {
    "KXTX_BOOTSTRAP_SERVERS": "bootstrap.servers",
    "KXTX_SECURITY_PROTOCOL": "security.protocol",
    "KXTX_SASL_MECHANISM": "sasl.mechanism",
    "KXTX_SASL_USERNAME": "sasl.username",
    "KXTX_SASL_PASSWORD": "sasl.password",
    "KXTX_SSL_CA_LOCATION": "ssl.ca.location",
    "KXTX_SSL_CERTIFICATE_LOCATION": "ssl.certificate.location",
    "KXTX_SSL_KEY_LOCATION": "ssl.key.location",
    "KXTX_SSL_KEY_PASSWORD": "ssl.key.password",
    "KXTX_SCHEMA_REGISTRY_URL": "schema.registry.url",
    "KXTX_SCHEMA_REGISTRY_USER_INFO": "schema.registry.basic.auth.user.info",
}

#: Java client property names that librdkafka spells differently.
JAVA_RENAMES = {
    "sasl.mechanisms": "sasl.mechanism",
}

#: Java-only properties that have no meaning for kxtx's clients and are dropped without error
#: (they tune the JVM client, e.g. serializers in a shared client.properties).
JAVA_IGNORED = {
    "key.serializer",
    "value.serializer",
    "key.deserializer",
    "value.deserializer",
    "ssl.truststore.type",
    "ssl.keystore.type",
    "default.api.timeout.ms",
}

#: librdkafka name -> kafka-python KafkaAdminClient keyword.
KAFKA_PYTHON_MAP = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "ssl.cipher.suites": "ssl_ciphers",
    "request.timeout.ms": "request_timeout_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
    "socket.send.buffer.bytes": "send_buffer_bytes",
    "socket.receive.buffer.bytes": "receive_buffer_bytes",
}

#: Properties that decide how to reach and authenticate to the cluster. If one of these cannot be
#: carried to kafka-python, the admin calls would connect differently from the data path: an error.
_CONNECTION_PREFIXES = ("security.", "sasl.", "ssl.", "bootstrap.", "client.")

#: Keys whose values are secrets: never printed (see `redacted`).
SECRET_KEYS = (
    "sasl.password",
    "ssl.key.password",
    "ssl.keystore.password",
    "sasl.jaas.config",
    "sasl.oauthbearer.client.secret",
    "ssl.truststore.password",
    "ssl.key.pem",
)


#: Properties that confluent-kafka itself reads (not librdkafka) and that must be Python bools:
#: `-X delivery.report.only.error=true` as a string is refused by the client.
_PYTHON_BOOLS = frozenset({"delivery.report.only.error"})


@dataclass
class Settings:
    """Resolved connection settings (librdkafka names) plus the network timeout in seconds."""

    props: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT_S
    #: seconds a transactional run waits out a failover (leader, coordinator, in-sync replicas)
    #: before exit 75: `KXTX_FAILOVER_TIMEOUT`, by default kafkaerrors.FAILOVER_S
    failover: float = FAILOVER_S
    #: where each key came from ("file", "env", "flag"), for error messages
    origin: dict[str, str] = field(default_factory=dict)
    #: the Schema Registry's settings (`schema.registry.*`, kxtx.client.registry), kept out of props
    registry: dict[str, str] = field(default_factory=dict)

    def registry_config(self, required_by: str) -> regmod.RegistryConfig:
        """The Schema Registry a command needs; ConfigError naming `required_by` when none is set."""
        return regmod.config(self.registry, self.timeout, required_by)

    @property
    def bootstrap(self) -> str:
        value = self.props.get("bootstrap.servers", "")
        if not value:
            raise ConfigError(
                "no bootstrap servers: pass -b HOST:PORT, set KXTX_BOOTSTRAP_SERVERS, "
                "or put bootstrap.servers in --command-config"
            )
        return value

    def confluent(self, **overrides: object) -> dict:
        """Config dict for confluent-kafka clients, with kxtx's bounded-time defaults."""
        timeout_ms = int(self.timeout * 1000)
        conf: dict[str, object] = {
            # Bounded so an unreachable cluster fails within --timeout instead of hanging.
            "socket.connection.setup.timeout.ms": max(1000, timeout_ms),
            # A new client connects to the broker it learns from the bootstrap metadata only after
            # this backoff: librdkafka's default made the first answer of every kxtx command late
            # (bench/README.md, "Client settings shared by every command"). Still doubles up to
            # reconnect.backoff.max.ms while a broker stays down.
            "reconnect.backoff.ms": 10,
        }
        conf.update(self.props)
        for key in _PYTHON_BOOLS.intersection(self.props):
            conf[key] = self._bool(key, self.props[key])
        conf["bootstrap.servers"] = self.bootstrap
        conf.update(overrides)
        return conf

    def _bool(self, key: str, value: object) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in ("true", "false"):
            raise ConfigError(f"{key}={value!r} ({self.origin.get(key, 'setting')}): expected true or false")
        return text == "true"

    def kafka_python(self, **overrides: object) -> dict:
        """Keyword arguments for kafka-python's KafkaAdminClient (used for KIP-664 admin calls)."""
        kwargs: dict[str, object] = {
            "bootstrap_servers": self.bootstrap.split(","),
            "request_timeout_ms": int(self.timeout * 1000),
            # KafkaAdminClient connects in its constructor and waits 30 s for a first answer
            # unless told otherwise: `inspect txn` and `fence` ignored --timeout because of it.
            "bootstrap_timeout_ms": int(self.timeout * 1000),
        }
        for key, value in self.props.items():
            if key in KAFKA_PYTHON_MAP:
                name = KAFKA_PYTHON_MAP[key]
                if name == "bootstrap_servers":
                    continue
                kwargs[name] = _kafka_python_value(name, value)
            elif key == "ssl.endpoint.identification.algorithm":
                kwargs["ssl_check_hostname"] = value.lower() == "https"
            elif key == "enable.ssl.certificate.verification":
                if value.lower() == "false":
                    raise ConfigError(
                        f"{key}=false ({self.origin.get(key, 'setting')}) cannot be carried to "
                        "kafka-python, which kxtx uses for transaction admin calls"
                    )
            elif key.startswith(_CONNECTION_PREFIXES):
                raise ConfigError(
                    f"setting {key!r} ({self.origin.get(key, 'setting')}) cannot be carried to "
                    "kafka-python, which kxtx uses for transaction admin calls; remove it or use "
                    "an equivalent the README lists"
                )
        if "security_protocol" in kwargs:
            kwargs["security_protocol"] = str(kwargs["security_protocol"]).upper()
        kwargs.update(overrides)
        return kwargs

    def client_config_error(self, text: str, conf: Mapping[str, object]) -> KxtxError | None:
        """The error for a client refused with `text` (librdkafka's message) when one setting
        given to kxtx is the cause: named as it was typed and where (librdkafka names the property
        its own way, an alias by the name it stands for: `linger.ms` as "queue.buffering.max.ms"),
        a UsageError (exit 2) for a -X, as a malformed -X is. None when no one setting is it."""
        from kxtx.client.properties import scrub  # local, as in from_java_properties

        key = _culprit(text, conf, [k for k in self.origin if k in conf])
        if key is None:
            return None
        origin = self.origin[key]
        setting = f"{key}={'***' if key in SECRET_KEYS else repr(conf[key])}"
        named = _PROPERTY_NAMED.sub(lambda m: f'{m.group(1)}"{key}"', scrub(text.strip()), count=1)
        if origin.startswith("from -X"):
            return UsageError(f"-X {setting}: {named}")
        return ConfigError(f"{setting} ({origin}): {named}")

    def redacted(self) -> dict[str, str]:
        shown = {k: ("***" if k in SECRET_KEYS else v) for k, v in self.props.items()}
        for k, v in self.registry.items():
            shown[k] = "***" if k in regmod.SECRET_KEYS else regmod.shown(v) if k.endswith(".url") else v
        return shown


#: Where librdkafka's refusals of a setting name the property ('Invalid value for configuration
#: property "P"', 'No such configuration property: "P"', 'Expected bool value for "P": ...').
_PROPERTY_NAMED = re.compile(r'((?:[Pp]roperty:? |value for ))"[^"]+"')

#: A property librdkafka does not have: set after the one tried, it stops the client's making in
#: its configuration, before any thread or connection.
_NO_SUCH_PROPERTY = "kxtx.no.such.property"


def _culprit(text: str, conf: Mapping[str, object], keys: list[str]) -> str | None:
    """Which of `keys` alone makes librdkafka refuse a client with `text`: each is tried on its
    own (its value, then a property that does not exist, so no client is ever made), the one
    refused with the same message is it. Tried, not looked up: which names are aliases of which
    is librdkafka's, and changes with its versions."""
    from confluent_kafka import KafkaException, Producer

    for key in keys:
        try:
            Producer({key: conf[key], _NO_SUCH_PROPERTY: "1"})
        except (KafkaException, ValueError, TypeError) as exc:
            if error_text(exc) == text:
                return key
    return None


def error_text(exc: BaseException) -> str:
    """The message of a confluent-kafka exception (its KafkaError's), else of any exception."""
    if exc.args and hasattr(exc.args[0], "str"):
        return exc.args[0].str()
    return str(exc) or type(exc).__name__


def _kafka_python_value(name: str, value: str) -> object:
    if name.endswith("_ms") or name.endswith("_bytes"):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"{name}: expected a whole number, got {value!r}") from None
    if name == "sasl_mechanism":
        return value.upper()
    return value


def load_command_config(path: str | os.PathLike, lines: dict[str, int] | None = None) -> dict[str, str]:
    """Read a Java client `.properties` file and translate it to librdkafka names. `lines`, when
    given, gets the line each librdkafka name came from (the names JAAS and keystores become have
    none)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--command-config {path}: {exc.strerror or exc}") from None
    raw_lines: dict[str, int] = {}
    raw = parse_properties(text, source=str(p), lines=raw_lines)
    if lines is not None:
        lines.update({JAVA_RENAMES.get(k, k): n for k, n in raw_lines.items()})
    return from_java_properties(raw, source=str(p))


def from_java_properties(raw: dict[str, str], source: str) -> dict[str, str]:
    """Java client names -> librdkafka names. JAAS and keystores are handled by `kxtx.client.properties`."""
    from kxtx.client import properties  # local: only when a file is given

    out: dict[str, str] = {}
    for key, value in raw.items():
        if key in JAVA_IGNORED:
            continue
        out[JAVA_RENAMES.get(key, key)] = value
    return properties.translate_java_security(out, source)


def resolve(
    bootstrap: list[str] | None = None,
    overrides: dict[str, str] | None = None,
    command_config: str | None = None,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    registry_url: str | None = None,
) -> Settings:
    """Merge the three sources: file < environment < flags."""
    environ: Mapping[str, str] = os.environ if env is None else env
    s = Settings()
    config_path = command_config or environ.get("KXTX_COMMAND_CONFIG")
    if config_path:
        lines: dict[str, int] = {}
        for k, v in load_command_config(config_path, lines).items():
            s.props[k], s.origin[k] = v, f"in {config_path}" + (f":{lines[k]}" if k in lines else "")
    for var, key in ENV_SETTINGS.items():
        if environ.get(var):
            s.props[key], s.origin[key] = environ[var], f"from ${var}"
    servers = split_csv(bootstrap)
    if servers:
        s.props["bootstrap.servers"], s.origin["bootstrap.servers"] = ",".join(servers), "from -b"
    for k, v in (overrides or {}).items():
        k = JAVA_RENAMES.get(k, k)
        s.props[k], s.origin[k] = v, f"from -X {k}"
    if registry_url:
        s.props["schema.registry.url"], s.origin["schema.registry.url"] = (
            registry_url,
            "from --schema-registry",
        )
    s.registry = regmod.split_settings(s.props, s.origin)
    if timeout is not None:
        if timeout <= 0:
            raise ConfigError("--timeout must be positive")
        s.timeout = timeout
    elif environ.get("KXTX_TIMEOUT"):
        s.timeout = env_seconds(environ, "KXTX_TIMEOUT")
    if environ.get("KXTX_FAILOVER_TIMEOUT"):
        s.failover = env_seconds(environ, "KXTX_FAILOVER_TIMEOUT")
    return s


def env_seconds(environ: Mapping[str, str], var: str) -> float:
    """A positive number of seconds from environment variable `var`."""
    try:
        value = float(environ[var])
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"${var}={environ[var]!r}: expected a positive number of seconds")
    return value
