"""Java client.properties security translation (JAAS, trust/key stores), the settings mapping to both
client libraries, and the redaction of secrets."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kxtx.client import properties
from kxtx.client.settings import resolve
from kxtx.errors import ConfigError

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def _props(tmp_path: Path, text: str) -> str:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "line, family, opts",
    [
        (
            f'{PLAIN} required username="alice" password="s3cret";',
            "PLAIN",
            {"username": "alice", "password": "s3cret"},
        ),
        (
            f'{SCRAM} required username="bob" password="p w;x";',
            "SCRAM",
            {"username": "bob", "password": "p w;x"},
        ),
        (
            f'{SCRAM} required\n  username="bob"\n  password="a\\"b";',
            "SCRAM",
            {"username": "bob", "password": 'a"b'},
        ),
        (
            f"{PLAIN} required username=carol password=plainword;",
            "PLAIN",
            {"username": "carol", "password": "plainword"},
        ),
        (
            f'{SCRAM} required username="u" password="pw" tokenauth="false";',
            "SCRAM",
            {"username": "u", "password": "pw", "tokenauth": "false"},
        ),
    ],
)
def test_parse_jaas(line, family, opts):
    assert properties.parse_jaas(line, "f") == (family, opts)


@pytest.mark.parametrize(
    "line, message",
    [
        ("nonsense", "cannot parse"),
        ("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;", "Krb5LoginModule"),
    ],
)
def test_parse_jaas_rejects(line, message):
    with pytest.raises(ConfigError, match=message):
        properties.parse_jaas(line, "f")


@pytest.mark.parametrize(
    "lines, expected",
    [
        # PLAIN without sasl.mechanism: PLAIN (Java would default to GSSAPI and fail)
        (
            [f'sasl.jaas.config={PLAIN} required username="a" password="pw1234";'],
            {"sasl.mechanism": "PLAIN", "sasl.username": "a", "sasl.password": "pw1234"},
        ),
        (
            [
                "sasl.mechanism=SCRAM-SHA-512",
                f'sasl.jaas.config={SCRAM} required username="a" password="pw1234";',
            ],
            {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "a", "sasl.password": "pw1234"},
        ),
        (
            [
                "sasl.mechanisms=SCRAM-SHA-256",
                f'sasl.jaas.config={SCRAM} required username="a" password="pw1234";',
            ],
            {"sasl.mechanism": "SCRAM-SHA-256"},
        ),
        (
            [
                "ssl.endpoint.identification.algorithm=",
                "ssl.protocol=TLSv1.3",
                "ssl.enabled.protocols=TLSv1.2,TLSv1.3",
                "ssl.truststore.type=PEM",
            ],
            {"ssl.endpoint.identification.algorithm": "none"},
        ),
    ],
)
def test_java_file_translation(tmp_path, lines, expected):
    s = resolve(command_config=_props(tmp_path, "\n".join(lines) + "\n"), env={})
    for key, value in expected.items():
        assert s.props[key] == value
    assert not {"sasl.jaas.config", "ssl.protocol", "ssl.enabled.protocols", "ssl.truststore.type"} & set(
        s.props
    )


@pytest.mark.parametrize(
    "lines, message",
    [
        (
            [f'sasl.jaas.config={SCRAM} required username="a" password="pw1234";'],
            "add sasl.mechanism=SCRAM-SHA-512",
        ),
        (
            ["sasl.mechanism=PLAIN", f'sasl.jaas.config={SCRAM} required username="a" password="pw1234";'],
            "does not match the SCRAM login module",
        ),
        ([f'sasl.jaas.config={PLAIN} required username="a";'], "no password="),
    ],
)
def test_java_file_translation_errors(tmp_path, lines, message):
    with pytest.raises(ConfigError, match=message):
        resolve(command_config=_props(tmp_path, "\n".join(lines) + "\n"), env={})


# --- stores -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def material(tmp_path_factory):
    """A CA, a client certificate, and PEM / PKCS12 / JKS-looking stores made from them."""
    from kxtx.sandbox import security as sb

    d = tmp_path_factory.mktemp("stores")
    ca_key, ca = sb._ca()
    key, cert = sb._leaf("alice", ca_key, ca, server=False)
    (d / "ca.pem").write_bytes(sb._pem(ca))
    (d / "ks.pem").write_bytes(sb._key_pem(key) + sb._pem(cert))
    (d / "ks.p12").write_bytes(sb._p12("alice", key, cert, ca, "storepw1"))
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.serialization import pkcs12

    (d / "ts.p12").write_bytes(
        pkcs12.serialize_key_and_certificates(
            None, None, None, [ca], ser.BestAvailableEncryption(b"trustpw1")
        )
    )
    (d / "store.jks").write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 60)
    return d, ca, cert


def test_pem_truststore_and_keystore_are_used_as_is(tmp_path, material):
    d, _ca, _cert = material
    s = resolve(
        command_config=_props(
            tmp_path,
            f"ssl.truststore.type=PEM\nssl.truststore.location={d}/ca.pem\n"
            f"ssl.keystore.type=PEM\nssl.keystore.location={d}/ks.pem\nbootstrap.servers=h:1\n",
        ),
        env={},
    )
    assert s.props["ssl.ca.location"] == f"{d}/ca.pem"
    assert s.props["ssl.certificate.location"] == s.props["ssl.key.location"] == f"{d}/ks.pem"
    kp = s.kafka_python()
    assert (kp["ssl_cafile"], kp["ssl_certfile"], kp["ssl_keyfile"]) == (
        f"{d}/ca.pem",
        f"{d}/ks.pem",
        f"{d}/ks.pem",
    )


def test_pkcs12_stores_are_converted_to_private_pem(tmp_path, material):
    import ssl

    from cryptography import x509

    d, ca, cert = material
    s = resolve(
        command_config=_props(
            tmp_path,
            (
                "bootstrap.servers=h:1\nsecurity.protocol=SSL\n"
                f"ssl.truststore.type=PKCS12\nssl.truststore.location={d}/ts.p12\nssl.truststore.password=trustpw1\n"
                f"ssl.keystore.type=PKCS12\nssl.keystore.location={d}/ks.p12\nssl.keystore.password=storepw1\n"
            ),
        ),
        env={},
    )
    assert not {k for k in s.props if k.startswith(("ssl.keystore", "ssl.truststore"))}
    ca_file, cert_file, key_file = (
        Path(s.props[k]) for k in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")
    )
    assert x509.load_pem_x509_certificate(ca_file.read_bytes()) == ca
    assert x509.load_pem_x509_certificates(cert_file.read_bytes())[0] == cert
    # the key stays encrypted with the store password, which becomes the key password
    assert b"ENCRYPTED PRIVATE KEY" in key_file.read_bytes()
    assert s.props["ssl.key.password"] == "storepw1"
    for f in (ca_file, cert_file, key_file):
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    # both libraries can load what was written
    ctx = ssl.create_default_context(cafile=str(ca_file))
    ctx.load_cert_chain(str(cert_file), str(key_file), password="storepw1")
    kp = s.kafka_python()
    assert kp["ssl_password"] == "storepw1" and kp["security_protocol"] == "SSL"
    assert s.confluent()["ssl.key.location"] == str(key_file)


@pytest.mark.parametrize(
    "line, message",
    [
        ("ssl.truststore.location={d}/store.jks", "is a JKS store.*keytool -importkeystore.*PKCS12"),
        ("ssl.keystore.location={d}/store.jks", "is a JKS store.*PKCS12.*PEM"),
        ("ssl.keystore.location={d}/ks.p12\nssl.keystore.password=wrong", "wrong or missing password"),
        ("ssl.truststore.location={d}/missing.p12", "No such file"),
    ],
)
def test_store_errors_say_which_form_to_use(tmp_path, material, line, message):
    d, _ca, _cert = material
    with pytest.raises(ConfigError, match=message) as err:
        resolve(command_config=_props(tmp_path, line.format(d=d) + "\n"), env={})
    assert "wrong" not in str(err.value).replace("wrong or missing", "")


def test_inline_pem_goes_to_private_files(tmp_path, material):
    d, _ca, _cert = material
    pem = (d / "ca.pem").read_text().replace("\n", "\\n\\\n")
    s = resolve(command_config=_props(tmp_path, f"ssl.truststore.certificates={pem}\n"), env={})
    assert Path(s.props["ssl.ca.location"]).read_text().strip() == (d / "ca.pem").read_text().strip()


# --- the one settings object, both libraries -------------------------------------------------------------
@pytest.mark.parametrize(
    "props, kafka_python",
    [
        (
            {
                "security.protocol": "sasl_ssl",
                "sasl.mechanism": "scram-sha-512",
                "sasl.username": "u",
                "sasl.password": "pw1234",
                "ssl.ca.location": "/ca.pem",
            },
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_plain_username": "u",
                "sasl_plain_password": "pw1234",
                "ssl_cafile": "/ca.pem",
            },
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "u",
                "sasl.password": "pw1234",
            },
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"},
        ),
        (
            {
                "security.protocol": "SSL",
                "ssl.ca.location": "/ca.pem",
                "ssl.certificate.location": "/c.pem",
                "ssl.key.location": "/k.pem",
                "ssl.key.password": "kpw12",
                "ssl.endpoint.identification.algorithm": "none",
            },
            {
                "security_protocol": "SSL",
                "ssl_certfile": "/c.pem",
                "ssl_keyfile": "/k.pem",
                "ssl_password": "kpw12",
                "ssl_check_hostname": False,
            },
        ),
    ],
)
def test_settings_map_to_both_libraries(props, kafka_python):
    s = resolve(bootstrap=["h:9093"], overrides=props, env={})
    conf = s.confluent()
    for key, value in props.items():
        assert conf[key] == value
    kp = s.kafka_python()
    for key, value in kafka_python.items():
        assert kp[key] == value


def test_secrets_are_scrubbed_and_redacted(tmp_path):
    s = resolve(
        command_config=_props(
            tmp_path,
            (
                "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                f'sasl.jaas.config={SCRAM} required username="alice" password="Tr0ub4dor&3";\n'
            ),
        ),
        env={},
    )
    assert "Tr0ub4dor&3" not in repr(s.redacted())
    assert properties.scrub("login failed for alice with Tr0ub4dor&3") == "login failed for alice with ***"
    properties.remember_secrets({"sasl.password": "env-secret-9"})
    assert "env-secret-9" not in properties.scrub("x env-secret-9 y")


def test_scrub_catches_the_bytes_repr_of_a_secret():
    properties.remember_secrets({"sasl.password": "pässwörd-1"})
    wire = repr(b"\x00user\x00" + "pässwörd-1".encode())
    assert "w\\xc3\\xb6rd" not in properties.scrub(f"Send: {wire}")
