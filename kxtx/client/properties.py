"""Translation of Java client security settings (JAAS, truststores, keystores) to librdkafka names,
and the redaction of secrets from anything kxtx prints.

A Java `client.properties` works as it is:
- `sasl.jaas.config` with PlainLoginModule / ScramLoginModule -> `sasl.username` / `sasl.password`
  (and `sasl.mechanism=PLAIN` when the file leaves it out: Java would default to GSSAPI and fail);
- `ssl.truststore.location` in PEM is used as is; in PKCS12 its certificates are written to a private
  temporary PEM file; JKS is rejected with the keytool command that converts it;
- `ssl.keystore.location` in PEM (key + chain in one file) is used as is; PKCS12 is converted to a
  private temporary PEM pair whose key stays encrypted with the key password; JKS is rejected;
- inline PEM (`ssl.truststore.certificates`, `ssl.keystore.certificate.chain`, `ssl.keystore.key`)
  goes to private temporary files (kafka-python reads certificates and keys from files only);
- JVM-only TLS tuning (`ssl.protocol`, `ssl.enabled.protocols`, key/trust manager algorithms) is
  dropped: OpenSSL negotiates TLS 1.2/1.3 by itself.
Temporary files live in a 0700 directory removed when the process exits.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kxtx.errors import ConfigError

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

_JAAS = re.compile(
    r"^\s*(?P<module>[\w.]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*(?P<opts>.*?);?\s*$",
    re.S,
)
_JAAS_OPT = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+?))(?=\s|;|$)')

_LOGIN_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": "PLAIN",
    "org.apache.kafka.common.security.scram.ScramLoginModule": "SCRAM",
}
_MECHANISMS = {"PLAIN": ("PLAIN",), "SCRAM": ("SCRAM-SHA-256", "SCRAM-SHA-512")}

#: Java-only TLS tuning without a librdkafka / kafka-python counterpart; OpenSSL's defaults apply.
JAVA_TLS_ONLY = {
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.truststore.type",
    "ssl.keystore.type",
}

#: Property names whose values are secrets (also the librdkafka names kxtx maps them to).
SECRET_PROPERTIES = frozenset(
    {
        "sasl.password",
        "sasl.jaas.config",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "ssl.key.pem",
        "ssl.keystore.key",
        "sasl.oauthbearer.client.secret",
    }
)

_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_secrets: set[str] = set()


# --- secrets -----------------------------------------------------------------------------------------
def remember_secrets(props: dict) -> None:
    """Note secret values so `scrub` can blank them out of any text kxtx writes."""
    for key, value in props.items():
        if key in SECRET_PROPERTIES and isinstance(value, str) and len(value) >= 4:
            _remember(value)
            if key == "sasl.jaas.config":
                for opt, q, b in _JAAS_OPT.findall(value):
                    if opt.lower() == "password" and len(q or b) >= 4:
                        _remember(q or b)


def remember(secret: str) -> None:
    """Note one secret value for `scrub` (a registry's password, say)."""
    if len(secret) >= 4:
        _remember(secret)


def _remember(secret: str) -> None:
    _secrets.add(secret)
    # as it shows in a repr of the bytes on the wire (kafka-python's --debug protocol dumps)
    _secrets.add(repr(secret.encode("utf-8"))[2:-1])


def scrub(text: str) -> str:
    """`text` with every remembered secret replaced by ***."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    return text


# --- JAAS --------------------------------------------------------------------------------------------
def parse_jaas(value: str, source: str) -> tuple[str, dict[str, str]]:
    """Return (login module family, options) from a `sasl.jaas.config` value."""
    m = _JAAS.match(value)
    if not m:
        raise ConfigError(
            f"{source}: sasl.jaas.config: cannot parse the JAAS line "
            '(expected: <LoginModule class> required username="..." password="...";)'
        )
    module = m.group("module")
    if module not in _LOGIN_MODULES:
        raise ConfigError(
            f"{source}: sasl.jaas.config uses {module}; kxtx understands PlainLoginModule and "
            "ScramLoginModule (set sasl.username/sasl.password instead)"
        )
    opts = {k: q or b for k, q, b in _JAAS_OPT.findall(m.group("opts"))}
    return _LOGIN_MODULES[module], {k: re.sub(r"\\(.)", r"\1", v) for k, v in opts.items()}


def _translate_jaas(out: dict[str, str], source: str) -> None:
    jaas = out.pop("sasl.jaas.config", None)
    if jaas is None:
        return
    family, opts = parse_jaas(jaas, source)
    for name in ("username", "password"):
        if name not in opts:
            raise ConfigError(f"{source}: sasl.jaas.config has no {name}=")
        out.setdefault(f"sasl.{name}", opts[name])
    mech = out.get("sasl.mechanism", "").upper()
    if not mech:
        if family == "SCRAM":
            raise ConfigError(
                f"{source}: sasl.jaas.config uses ScramLoginModule but sasl.mechanism "
                "is not set: add sasl.mechanism=SCRAM-SHA-512 (or SCRAM-SHA-256)"
            )
        out["sasl.mechanism"] = "PLAIN"
    elif mech not in _MECHANISMS[family]:
        raise ConfigError(
            f"{source}: sasl.mechanism={mech} does not match the {family} login module "
            f"in sasl.jaas.config (use {' or '.join(_MECHANISMS[family])})"
        )


# --- stores ------------------------------------------------------------------------------------------
def _read_store(path: str, key: str, source: str) -> tuple[bytes, str]:
    """The store `key` names and its kind, "PEM" or "PKCS12"; a JKS store is an error."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{source}: {key} {path}: {exc.strerror or exc}") from None
    if data.lstrip().startswith(b"-----BEGIN"):
        return data, "PEM"
    if data[:4] == _JKS_MAGIC:
        raise ConfigError(_jks_message(source, key, path))
    return data, "PKCS12"


def _jks_message(source: str, key: str, path: str) -> str:
    return (
        f"{source}: {key} {path} is a JKS store, which kxtx cannot read; convert it to PKCS12 "
        f"(keytool -importkeystore -srckeystore {path} -destkeystore store.p12 "
        f"-deststoretype PKCS12) or to PEM, and point {key} at the result"
    )


def _load_p12(
    data: bytes, password: str | None, key: str, source: str
) -> tuple[PrivateKeyTypes | None, x509.Certificate | None, list[x509.Certificate]]:
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:  # pragma: no cover - a dependency; kept for a clear message
        raise ConfigError(
            f"{source}: {key} is PKCS12, which needs the Python 'cryptography' "
            "package; install it or convert the store to PEM"
        ) from None
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError:
        pw = key.replace("location", "password")
        raise ConfigError(
            f"{source}: {key} is not a readable PKCS12 store with the given {pw} "
            "(wrong or missing password?); PKCS12 and PEM are supported"
        ) from None


def _translate_truststore(out: dict[str, str], source: str) -> None:
    password = out.pop("ssl.truststore.password", None)
    inline = out.pop("ssl.truststore.certificates", None)
    if inline is not None:
        out.setdefault("ssl.ca.location", str(_private_file("ca.pem", inline.encode())))
    path = out.pop("ssl.truststore.location", None)
    if path is None:
        return
    data, kind = _read_store(path, "ssl.truststore.location", source)
    if kind == "PEM":
        out.setdefault("ssl.ca.location", path)
        return
    _key, cert, extra = _load_p12(data, password, "ssl.truststore.location", source)
    certs = ([cert] if cert is not None else []) + list(extra)
    if not certs:
        raise ConfigError(f"{source}: ssl.truststore.location {path} holds no certificate")
    out.setdefault("ssl.ca.location", str(_private_file("truststore.pem", b"".join(map(_cert_pem, certs)))))


def _translate_keystore(out: dict[str, str], source: str) -> None:
    store_pw = out.pop("ssl.keystore.password", None)
    chain = out.pop("ssl.keystore.certificate.chain", None)
    inline_key = out.pop("ssl.keystore.key", None)
    if chain is not None or inline_key is not None:
        if chain is None or inline_key is None:
            raise ConfigError(f"{source}: ssl.keystore.certificate.chain and ssl.keystore.key go together")
        out.setdefault("ssl.certificate.location", str(_private_file("cert.pem", chain.encode())))
        out.setdefault("ssl.key.location", str(_private_file("key.pem", inline_key.encode())))
    path = out.pop("ssl.keystore.location", None)
    if path is None:
        return
    data, kind = _read_store(path, "ssl.keystore.location", source)
    if kind == "PEM":  # Java's PEM keystore: private key and certificate chain in one file
        out.setdefault("ssl.certificate.location", path)
        out.setdefault("ssl.key.location", path)
        return
    key, cert, extra = _load_p12(data, store_pw, "ssl.keystore.location", source)
    if key is None or cert is None:
        raise ConfigError(f"{source}: ssl.keystore.location {path} holds no private key and certificate")
    # The key stays encrypted on disk: with ssl.key.password (Java's key password), else the store's.
    key_pw = out.get("ssl.key.password") or store_pw
    if key_pw and "ssl.key.password" not in out:
        out["ssl.key.password"] = key_pw
    out.setdefault(
        "ssl.certificate.location", str(_private_file("cert.pem", b"".join(map(_cert_pem, [cert, *extra]))))
    )
    out.setdefault("ssl.key.location", str(_private_file("key.pem", _key_pem(key, key_pw))))


def _cert_pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    return cert.public_bytes(Encoding.PEM)


def _key_pem(key: PrivateKeyTypes, password: str | None) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser

    enc = ser.BestAvailableEncryption(password.encode()) if password else ser.NoEncryption()
    return key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, enc)


_tmpdir: Path | None = None


def _private_file(name: str, data: bytes) -> Path:
    """Write `data` to a 0600 file in this process's 0700 directory (removed at exit)."""
    global _tmpdir
    if _tmpdir is None:
        _tmpdir = Path(tempfile.mkdtemp(prefix="kxtx-tls-"))
        atexit.register(shutil.rmtree, _tmpdir, True)
    path = _tmpdir / name
    n = 1
    while path.exists():
        n += 1
        path = _tmpdir / f"{n}-{name}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


# --- the entry point ---------------------------------------------------------------------------------
def translate_java_security(props: dict[str, str], source: str) -> dict[str, str]:
    """Java client security properties -> librdkafka names (see the module docstring)."""
    remember_secrets(props)
    out = {k: v for k, v in props.items() if k not in JAVA_TLS_ONLY}
    _translate_jaas(out, source)
    _translate_truststore(out, source)
    _translate_keystore(out, source)
    algo = out.get("ssl.endpoint.identification.algorithm")
    if algo is not None and algo.strip() == "":
        out["ssl.endpoint.identification.algorithm"] = "none"  # Java's "" = no hostname check
    remember_secrets(out)
    return out
