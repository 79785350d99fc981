"""Security for the sandbox broker: `kxtx sandbox start --security sasl_ssl|sasl_plaintext|ssl`.

Generates, in `<state dir>/security/`, a throwaway CA, a broker certificate for 127.0.0.1/localhost,
SCRAM-SHA-512 and SCRAM-SHA-256 credentials (created in KRaft at storage-format time with
`--add-scram`), client certificates for mutual TLS, and one Java `client.properties` per user.
The KRaft StandardAuthorizer is on; `admin` is a super user, `limited` gets ALL on resources whose
name starts with `limited.` only (so tests and demos see real authorization failures elsewhere).

Only the client listener is secured. The controller listener and an internal inter-broker listener
stay PLAINTEXT on 127.0.0.1 and their principal (User:ANONYMOUS) is a super user: the broker talks to
its own controller and sends transaction markers to itself over them. Anyone who can open a loopback
connection to those two ports is therefore trusted: acceptable for a throwaway local broker, and said
so in the README.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kxtx.errors import UsageError
from kxtx.sandbox.nodes import SandboxInfo, SecurityInfo, free_port

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

MODES = ("plaintext", "sasl_plaintext", "sasl_ssl", "ssl")
USERS = ("admin", "limited")
#: Prefix of the resources the limited user may use (Topic, Group, TransactionalId; ALL operations).
LIMITED_PREFIX = "limited."
#: The mechanism each user's client.properties uses (both users have credentials for both).
USER_MECHANISM = {"admin": "SCRAM-SHA-512", "limited": "SCRAM-SHA-256"}
_SCRAM_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass
class SecureListeners:
    """The `listeners` hook of `Sandbox.start` for a secured client listener."""

    mode: str
    internal_port: int = 0
    passwords: dict[str, str] = field(default_factory=dict)
    store_password: str = ""
    dir: Path | None = None
    ports: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mode = self.mode.lower()
        if self.mode not in MODES or self.mode == "plaintext":
            raise UsageError(
                f"--security {self.mode}: choose one of sasl_ssl, sasl_plaintext, ssl "
                "(plaintext is the default without --security)"
            )
        if not self.passwords:
            # hex: no character needs quoting in JAAS, in --add-scram or in properties files
            self.passwords = {u: secrets.token_hex(12) for u in USERS}
        self.store_password = self.store_password or secrets.token_hex(12)

    @property
    def protocol(self) -> str:
        return self.mode.upper()

    @property
    def sasl(self) -> bool:
        return self.mode.startswith("sasl")

    @property
    def tls(self) -> bool:
        return self.mode in ("sasl_ssl", "ssl")

    @property
    def _files(self) -> Path:
        """Where the certificates and client properties are (made by `prepare`)."""
        if self.dir is None:
            raise RuntimeError("SecureListeners.prepare() has not run")
        return self.dir

    # --- hooks: broker configuration ---------------------------------------------------------------
    def prepare(self, state_dir: str | Path, ports: list[int]) -> None:
        """Once per sandbox: certificates, and client.properties naming every node's client port."""
        self.dir = Path(state_dir) / "security"
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(state_dir, 0o700)  # server.properties and the state file hold credentials
        self.ports = list(ports)
        if self.tls:
            self._write_material()
        for user in USERS:
            self._write_client_properties(user)

    def broker_properties(
        self, state_dir: str | Path, port: int, controller_port: int | None
    ) -> dict[str, str]:
        """One node's listeners: secured client listener, plaintext INTERNAL (and CONTROLLER)."""
        if self.dir is None:  # called without prepare(): a one-node sandbox
            self.prepare(state_dir, [port])
        self.internal_port = self.internal_port or free_port()
        name, lname = self.protocol, self.protocol.lower()
        listeners = f"{name}://127.0.0.1:{port},INTERNAL://127.0.0.1:{self.internal_port}"
        if controller_port:
            listeners += f",CONTROLLER://127.0.0.1:{controller_port}"
        props = {
            "listeners": listeners,
            "advertised.listeners": f"{name}://127.0.0.1:{port},INTERNAL://127.0.0.1:{self.internal_port}",
            "listener.security.protocol.map": f"{name}:{name},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "authorizer.class.name": _AUTHORIZER,
            "super.users": "User:admin;User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
        }
        if self.sasl:
            props["sasl.enabled.mechanisms"] = ",".join(_SCRAM_MECHANISMS)
            for mech in _SCRAM_MECHANISMS:
                # The broker needs a login context per mechanism even though it never logs in here.
                props[f"listener.name.{lname}.{mech.lower()}.sasl.jaas.config"] = _jaas(
                    "admin", self.passwords["admin"]
                )
        if self.tls:
            props.update(
                {
                    "ssl.keystore.type": "PKCS12",
                    "ssl.keystore.location": str(self._files / "broker.p12"),
                    "ssl.keystore.password": self.store_password,
                    "ssl.key.password": self.store_password,
                    "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": str(self._files / "ca.pem"),
                }
            )
        if self.mode == "ssl":
            props["ssl.client.auth"] = "required"
            # CN=admin -> User:admin, so ACLs read the same in every mode.
            props["ssl.principal.mapping.rules"] = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"
        return props

    def format_args(self) -> list[str]:
        """Extra `kafka-storage format` arguments: the SCRAM credentials."""
        if not self.sasl:
            return []
        return [
            arg
            for user in USERS
            for mech in _SCRAM_MECHANISMS
            for arg in ("--add-scram", f"{mech}=[name={user},password={self.passwords[user]}]")
        ]

    def bootstrap(self, port: int) -> str:
        return f"127.0.0.1:{port}"

    def extra(self) -> SecurityInfo:
        """What the sandbox keeps of its security in its state (`SandboxInfo.extra`)."""
        return SecurityInfo(
            security=self.mode,
            client_properties={u: str(self._properties_path(u)) for u in USERS},
            principals={
                "admin": "User:admin (super user)",
                "limited": f"User:limited (ALL on Topic/Group/TransactionalId prefixed {LIMITED_PREFIX!r})",
            },
            admin_client=self.client_config("admin"),
        )

    def after_start(self, info: SandboxInfo) -> None:
        """Grant the limited user its prefixed ACLs (as admin)."""
        grant_limited_acls(info.bootstrap, self.client_config("admin"))

    # --- clients --------------------------------------------------------------------------------------
    def client_config(self, user: str) -> dict[str, str]:
        """librdkafka names (the same keys kxtx's `-X` takes)."""
        conf = {"security.protocol": self.protocol}
        if self.sasl:
            conf.update(
                {
                    "sasl.mechanism": USER_MECHANISM[user],
                    "sasl.username": user,
                    "sasl.password": self.passwords[user],
                }
            )
        if self.tls:
            conf["ssl.ca.location"] = str(self._files / "ca.pem")
        if self.mode == "ssl":
            conf["ssl.certificate.location"] = str(self._files / f"{user}.pem")
            conf["ssl.key.location"] = str(self._files / f"{user}.key")
        return conf

    def java_properties(self, user: str) -> dict[str, str]:
        """A Java client.properties, as Kafka's own tools (and kxtx --command-config) read it."""
        props = {
            "bootstrap.servers": ",".join(self.bootstrap(p) for p in self.ports),
            "security.protocol": self.protocol,
        }
        if self.sasl:
            props["sasl.mechanism"] = USER_MECHANISM[user]
            props["sasl.jaas.config"] = _jaas(user, self.passwords[user])
        if self.tls:
            props["ssl.truststore.type"] = "PEM"
            props["ssl.truststore.location"] = str(self._files / "ca.pem")
        if self.mode == "ssl":
            props.update(
                {
                    "ssl.keystore.type": "PKCS12",
                    "ssl.keystore.location": str(self._files / f"{user}.p12"),
                    "ssl.keystore.password": self.store_password,
                    "ssl.key.password": self.store_password,
                }
            )
        return props

    def _properties_path(self, user: str) -> Path:
        return self._files / f"{user}.properties"

    def _write_client_properties(self, user: str) -> None:
        text = "".join(f"{k}={v}\n" for k, v in self.java_properties(user).items())
        _write_private(self._properties_path(user), text.encode())

    # --- certificates -----------------------------------------------------------------------------------
    def _write_material(self) -> None:
        ca_key, ca_cert = _ca()
        _write_private(self._files / "ca.pem", _pem(ca_cert))
        key, cert = _leaf("kxtx-sandbox-broker", ca_key, ca_cert, server=True)
        _write_private(self._files / "broker.p12", _p12("broker", key, cert, ca_cert, self.store_password))
        if self.mode != "ssl":
            return
        for user in USERS:
            key, cert = _leaf(user, ca_key, ca_cert, server=False)
            _write_private(self._files / f"{user}.pem", _pem(cert))
            _write_private(self._files / f"{user}.key", _key_pem(key))
            _write_private(self._files / f"{user}.p12", _p12(user, key, cert, ca_cert, self.store_password))


def _jaas(user: str, password: str) -> str:
    return f'{_SCRAM_MODULE} required username="{user}" password="{password}";'


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def grant_limited_acls(bootstrap: str, admin_conf: dict) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    from kxtx.client.clients import translate

    admin = AdminClient(
        {"bootstrap.servers": bootstrap, "log.connection.close": False, "log_level": 3, **admin_conf}
    )
    bindings = [
        AclBinding(
            rtype,
            LIMITED_PREFIX,
            ResourcePatternType.PREFIXED,
            "User:limited",
            "*",
            AclOperation.ALL,
            AclPermissionType.ALLOW,
        )
        for rtype in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)
    ]
    for fut in admin.create_acls(bindings, request_timeout=30).values():
        try:
            fut.result(timeout=30)
        except Exception as exc:
            raise translate(exc, "creating the limited user's ACLs") from exc


# --- X.509 with `cryptography` (imported here only: the sandbox with --security needs it) -------------
def _ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "kxtx sandbox throwaway CA")])
    builder = (
        _base(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    return key, _sign(builder, key)


def _leaf(
    cn: str, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate, server: bool
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    # CN only: the broker sees "CN=admin", which the principal mapping rule turns into User:admin.
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    usages = [ExtendedKeyUsageOID.CLIENT_AUTH] + ([ExtendedKeyUsageOID.SERVER_AUTH] if server else [])
    builder = (
        _base(name, ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return key, _sign(builder, ca_key)


def _base(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    from cryptography import x509

    now = _dt.datetime.now(_dt.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(hours=1))
        .not_valid_after(now + _dt.timedelta(days=365))
    )


def _sign(builder: x509.CertificateBuilder, key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    from cryptography.hazmat.primitives import hashes

    return builder.sign(key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding

    return cert.public_bytes(Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser

    return key.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())


def _p12(
    alias: str,
    key: ec.EllipticCurvePrivateKey,
    cert: x509.Certificate,
    ca_cert: x509.Certificate,
    password: str,
) -> bytes:
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.serialization import pkcs12

    return pkcs12.serialize_key_and_certificates(
        alias.encode(), key, cert, [ca_cert], ser.BestAvailableEncryption(password.encode())
    )
