"""Translation of Java client security settings (JAAS, truststores) to librdkafka names.

Kept separate so the security issue can extend it without touching the settings merge.
"""

from __future__ import annotations

import re

from kxtx.errors import ConfigError

_JAAS = re.compile(
    r"^\s*(?P<module>[\w.]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*(?P<opts>.*?);?\s*$",
    re.S,
)
_JAAS_OPT = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+?))(?=\s|;|$)')

_LOGIN_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": "PLAIN",
    "org.apache.kafka.common.security.scram.ScramLoginModule": "SCRAM",
}


def parse_jaas(value: str, source: str) -> tuple[str, dict[str, str]]:
    """Return (login module family, options) from a `sasl.jaas.config` value."""
    m = _JAAS.match(value)
    if not m:
        raise ConfigError(f"{source}: sasl.jaas.config: cannot parse the JAAS line")
    module = m.group("module")
    if module not in _LOGIN_MODULES:
        raise ConfigError(
            f"{source}: sasl.jaas.config uses {module}; kxtx understands PlainLoginModule and "
            "ScramLoginModule (set sasl.username/sasl.password instead)"
        )
    opts = {k: (q if q is not None else b) for k, q, b in _JAAS_OPT.findall(m.group("opts"))}
    return _LOGIN_MODULES[module], {k: v.replace('\\"', '"') for k, v in opts.items()}


def translate_java_security(props: dict[str, str], source: str) -> dict[str, str]:
    out = dict(props)
    jaas = out.pop("sasl.jaas.config", None)
    if jaas is not None:
        _family, opts = parse_jaas(jaas, source)
        for name in ("username", "password"):
            if name not in opts:
                raise ConfigError(f"{source}: sasl.jaas.config has no {name}=")
            out.setdefault(f"sasl.{name}", opts[name])
    trust = out.pop("ssl.truststore.location", None)
    if trust is not None:
        if not trust.lower().endswith((".pem", ".crt", ".cer")):
            raise ConfigError(
                f"{source}: ssl.truststore.location {trust} looks like a JKS/PKCS12 store; "
                "convert it to PEM and set ssl.ca.location instead"
            )
        out.setdefault("ssl.ca.location", trust)
    out.pop("ssl.truststore.password", None)
    if "ssl.keystore.location" in out:
        raise ConfigError(
            f"{source}: ssl.keystore.location is a Java keystore; convert it to PEM and set "
            "ssl.certificate.location and ssl.key.location instead"
        )
    return out
