"""The Schema Registry connection: its settings, the client, and its errors as kxtx errors.

The registry is reached through confluent-kafka's `schema_registry` client (the `registry` extra). Its
settings come from the same sources as the Kafka connection (`-X`, `--command-config`, `KXTX_*`), under
the names Java clients use, with `schema.registry.` in front of the ones the registry client reads:

    schema.registry.url                       --schema-registry URL, $KXTX_SCHEMA_REGISTRY_URL
    schema.registry.basic.auth.user.info      USER:PASSWORD, $KXTX_SCHEMA_REGISTRY_USER_INFO
                                              (a Java client.properties' `basic.auth.user.info` too)
    schema.registry.ssl.ca.location           PEM file of the CAs to trust
    schema.registry.ssl.certificate.location  PEM client certificate (mTLS)
    schema.registry.ssl.key.location          its PEM private key
    schema.registry.ssl.key.password          the key's password

None of them reaches librdkafka, and the secrets are never printed (`SECRET_KEYS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from kxtx.errors import ConfigError, KafkaOperationError, Unavailable, UsageError

PREFIX = "schema.registry."

#: schema.registry.* names -> the confluent-kafka SchemaRegistryClient's
_CLIENT_KEYS = {
    "schema.registry.url": "url",
    "schema.registry.basic.auth.user.info": "basic.auth.user.info",
    "schema.registry.ssl.ca.location": "ssl.ca.location",
    "schema.registry.ssl.certificate.location": "ssl.certificate.location",
    "schema.registry.ssl.key.location": "ssl.key.location",
    "schema.registry.ssl.key.password": "ssl.key.password",
}

#: Java client names for the same settings (a shared client.properties): -> ours
JAVA_NAMES = {
    "basic.auth.user.info": "schema.registry.basic.auth.user.info",
    "schema.registry.ssl.truststore.location": "schema.registry.ssl.truststore.location",
}

#: `basic.auth.credentials.source` values that mean "the user info above"; anything else
#: (SASL_INHERIT, URL) kxtx does not carry, and says so
_USER_INFO_SOURCES = ("USER_INFO", "")

SECRET_KEYS = ("schema.registry.basic.auth.user.info", "schema.registry.ssl.key.password")

#: seconds between the client's own retries of a request that failed before an answer (refused,
#: reset, timed out); it tries MAX_RETRIES + 1 times before kxtx reports the registry unavailable
MAX_RETRIES = 2
RETRY_WAIT_MS = 500


class RegistryUnavailable(Unavailable):
    """The registry did not answer (refused, timed out, 5xx): nothing of the open transaction is
    committed; running the same command again continues where the last commit left off."""

    #: not a record's fault: the pipe's workers let it through instead of failing the record
    #: (kxtx.pipe.worker.transform), and a round that met it is retried like a failover
    retriable = True


class RegistryError(KafkaOperationError):
    """The registry answered with an error that retrying will not heal (401, 403, 404, 409, 422)."""

    def __init__(self, message: str, status: int | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code = status, code


@dataclass(frozen=True)
class RegistryConfig:
    """Where the registry is and how to authenticate; `timeout` bounds each HTTP request."""

    url: str
    props: tuple[tuple[str, str], ...] = ()
    timeout: float = 30.0

    @property
    def shown_url(self) -> str:
        """The URL for messages: without a user and password written into it."""
        return shown(self.url)

    def client_conf(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"url": self.url, "timeout": self.timeout}
        conf["max.retries"] = MAX_RETRIES
        conf["retries.wait.ms"] = RETRY_WAIT_MS
        conf["retries.max.wait.ms"] = RETRY_WAIT_MS * 4
        for key, value in self.props:
            conf[_CLIENT_KEYS[key]] = value
        return conf


def shown(url: str) -> str:
    """`url` with any user info (`https://user:secret@host`) replaced by `***`."""
    from urllib.parse import urlsplit, urlunsplit  # here: every command imports this module

    parts = [p.strip() for p in url.split(",")]
    out = []
    for part in parts:
        s = urlsplit(part)
        if s.username is not None or s.password is not None:
            host = s.hostname or ""
            netloc = "***@" + host + (f":{s.port}" if s.port else "")
            part = urlunsplit((s.scheme, netloc, s.path, s.query, s.fragment))
        out.append(part)
    return ",".join(out)


def split_settings(props: dict[str, str], origin: dict[str, str]) -> dict[str, str]:
    """Take the registry's settings out of a connection's librdkafka properties (which would refuse
    them) and return them, checked."""
    found: dict[str, str] = {}
    for key in [
        k for k in props if k.startswith(PREFIX) or k in JAVA_NAMES or k == "basic.auth.credentials.source"
    ]:
        value = props.pop(key)
        if key == "basic.auth.credentials.source":
            if value.strip().upper() not in _USER_INFO_SOURCES:
                raise ConfigError(
                    f"basic.auth.credentials.source={value} ({origin.get(key, 'setting')}): kxtx takes "
                    "only USER_INFO (schema.registry.basic.auth.user.info=USER:PASSWORD)"
                )
            continue
        name = JAVA_NAMES.get(key, key)
        if name not in _CLIENT_KEYS:
            hint = (
                "; give the CA as PEM: schema.registry.ssl.ca.location"
                if "truststore" in name or "keystore" in name
                else ""
            )
            raise ConfigError(f"unknown schema registry setting {key!r} ({origin.get(key, 'setting')}){hint}")
        found[name] = value
        origin.setdefault(name, origin.get(key, "setting"))
    _remember_secrets(found)
    info = found.get("schema.registry.basic.auth.user.info")
    if info is not None and ":" not in info:
        where = origin.get("schema.registry.basic.auth.user.info", "setting")
        raise ConfigError(f"schema.registry.basic.auth.user.info ({where}): expected USER:PASSWORD")
    return found


def _remember_secrets(found: dict[str, str]) -> None:
    """So that no message kxtx writes shows them (kxtx.client.properties.scrub)."""
    from urllib.parse import urlsplit

    from kxtx.client.properties import remember

    for key in SECRET_KEYS:
        if key in found:
            remember(found[key])
            remember(found[key].partition(":")[2])
    for one in found.get("schema.registry.url", "").split(","):
        password = urlsplit(one.strip()).password
        if password:
            remember(password)


def config(registry: dict[str, str], timeout: float, required_by: str) -> RegistryConfig:
    """The registry a command needs (`required_by` names what needs it, for the error)."""
    from urllib.parse import urlsplit

    url = registry.get("schema.registry.url", "").strip()
    if not url:  # an option that needs another: a usage error (exit 2), nothing was done
        raise UsageError(
            f"{required_by} needs a schema registry: pass --schema-registry URL, set "
            "KXTX_SCHEMA_REGISTRY_URL, or put schema.registry.url in --command-config"
        )
    for one in url.split(","):
        s = urlsplit(one.strip())
        if s.scheme not in ("http", "https") or not s.hostname:
            raise ConfigError(f"schema registry URL {shown(one.strip())!r}: expected http(s)://HOST[:PORT]")
    props = tuple(sorted((k, v) for k, v in registry.items() if k != "schema.registry.url"))
    return RegistryConfig(url, props, timeout)


def connect(cfg: RegistryConfig) -> Any:
    """A confluent-kafka SchemaRegistryClient (imported here, only by commands that use a registry:
    it brings httpx and authlib)."""
    try:
        from confluent_kafka.schema_registry import SchemaRegistryClient
    except ImportError as exc:
        # imported here: this module reaches Spark's workers by value (worker.SHIPPED_FOR_SCHEMAS),
        # with only what it imports when loaded
        from kxtx.wording import install_hint

        raise ConfigError(
            f"the schema registry needs kxtx's `registry` extra ({install_hint('registry')}): {exc}"
        ) from None
    try:
        return SchemaRegistryClient(cfg.client_conf())
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"schema registry {cfg.shown_url}: {exc}") from None


T = TypeVar("T")


def call(cfg: RegistryConfig, what: str, fn: Callable[[], T]) -> T:
    """Run one registry request, its failure as a kxtx error naming the registry and `what` was
    asked (never the user info)."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    try:
        return fn()
    except SchemaRegistryError as exc:
        raise translate(cfg, what, exc.http_status_code, exc.error_code, exc.error_message) from None
    except Exception as exc:  # the HTTP client's: connection refused, timeout, TLS (httpx, ssl, OSError)
        family = type(exc).__module__.split(".")[0]
        if not isinstance(exc, OSError) and family not in ("httpx", "httpx2", "httpcore", "ssl"):
            raise
        reason = str(exc) or type(exc).__name__
        import ssl  # here: every command imports this module, few reach a registry

        if isinstance(exc, ssl.SSLError) or "CERTIFICATE" in reason.upper() or "SSL" in reason.upper():
            # a certificate or handshake problem: retrying will not heal it
            raise RegistryError(f"schema registry {cfg.shown_url}: TLS failed ({what}): {reason}") from None
        raise RegistryUnavailable(
            f"schema registry {cfg.shown_url} did not answer ({what}): {reason}"
        ) from None


def translate(
    cfg: RegistryConfig, what: str, status: int | None, code: int | None, message: str
) -> Exception:
    """An HTTP error of the registry as a kxtx error."""
    where = f"schema registry {cfg.shown_url}"
    if status in (401, 403):
        why = "authentication failed" if status == 401 else "access denied"
        hint = (
            " (check schema.registry.basic.auth.user.info)"
            if any(k == "schema.registry.basic.auth.user.info" for k, _ in cfg.props)
            else " (no credentials given: set schema.registry.basic.auth.user.info)"
        )
        return RegistryError(f"{where}: {why} (HTTP {status}) {what}{hint}", status, code)
    if status is not None and (status >= 500 or status == 429):
        return RegistryUnavailable(f"{where} failed ({what}): HTTP {status}: {message}")
    return RegistryError(f"{where}: {what}: {message} (HTTP {status}, code {code})", status, code)
