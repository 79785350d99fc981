import pytest

from kxtx.client.settings import Settings, resolve
from kxtx.errors import ConfigError


def _file(tmp_path, text):
    p = tmp_path / "client.properties"
    p.write_text(text)
    return str(p)


def test_precedence_file_env_flags(tmp_path):
    path = _file(tmp_path, "bootstrap.servers=file:9092\nclient.id=from-file\nlinger.ms=1\n")
    env = {"KXTX_BOOTSTRAP_SERVERS": "env:9092", "KXTX_SASL_USERNAME": "env-user"}
    s = resolve(None, {"linger.ms": "9"}, path, None, env)
    assert s.props["bootstrap.servers"] == "env:9092"  # env beats file
    assert s.props["client.id"] == "from-file"
    assert s.props["linger.ms"] == "9"  # -X beats file
    assert s.props["sasl.username"] == "env-user"
    s = resolve(["a:1,b:2", "c:3"], {}, path, None, env)
    assert s.bootstrap == "a:1,b:2,c:3"  # -b beats env


def test_command_config_from_env(tmp_path):
    path = _file(tmp_path, "bootstrap.servers=f:1\n")
    assert resolve(env={"KXTX_COMMAND_CONFIG": path}).bootstrap == "f:1"


def test_missing_bootstrap_is_a_clear_error():
    with pytest.raises(ConfigError, match="no bootstrap servers"):
        resolve(env={}).bootstrap


def test_timeout_sources():
    assert resolve(env={}).timeout == 30
    assert resolve(env={"KXTX_TIMEOUT": "5"}).timeout == 5
    assert resolve(timeout=2, env={"KXTX_TIMEOUT": "5"}).timeout == 2
    with pytest.raises(ConfigError):
        resolve(timeout=0, env={})
    with pytest.raises(ConfigError, match="KXTX_TIMEOUT"):
        resolve(env={"KXTX_TIMEOUT": "soon"})


@pytest.mark.parametrize(
    "env, timeout, failover",
    [
        ({}, 30.0, 90.0),
        ({"KXTX_FAILOVER_TIMEOUT": "20"}, 30.0, 20.0),
        ({"KXTX_FAILOVER_TIMEOUT": "2.5", "KXTX_TIMEOUT": "4"}, 4.0, 2.5),
    ],
)
def test_failover_timeout_from_the_environment(env, timeout, failover):
    s = resolve(env=env)
    assert (s.timeout, s.failover) == (timeout, failover)


def test_the_failover_default_is_the_tables():
    from kxtx.client import kafkaerrors, txwriter

    assert Settings().failover == kafkaerrors.FAILOVER_S == txwriter.TxWriter("t", 1.0).failover_s


@pytest.mark.parametrize("var", ["KXTX_TIMEOUT", "KXTX_FAILOVER_TIMEOUT"])
@pytest.mark.parametrize("value", ["soon", "0", "-5", "nan", "inf"])
def test_seconds_from_the_environment_must_be_positive(var, value):
    with pytest.raises(ConfigError, match=rf"\${var}='{value}': expected a positive number of seconds"):
        resolve(env={var: value})


SECURE = {
    "bootstrap.servers": "h1:9093,h2:9093",
    "security.protocol": "sasl_ssl",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": "alice",
    "sasl.password": "s3cret",
    "ssl.ca.location": "/ca.pem",
    "ssl.certificate.location": "/client.pem",
    "ssl.key.location": "/client.key",
    "ssl.key.password": "kp",
    "ssl.endpoint.identification.algorithm": "none",
    "linger.ms": "5",  # data-path only: not for the admin client, not an error
}


def test_confluent_config_carries_everything():
    s = resolve(None, SECURE, None, 10, env={})
    conf = s.confluent(**{"transactional.id": "x"})
    for key, value in SECURE.items():
        assert conf[key] == value
    assert conf["transactional.id"] == "x"
    assert conf["socket.connection.setup.timeout.ms"] == 10000


def test_reconnect_backoff_default_and_override():
    assert resolve(["h:1"], {}, None, 10, env={}).confluent()["reconnect.backoff.ms"] == 10
    mine = resolve(["h:1"], {"reconnect.backoff.ms": "250"}, None, 10, env={})
    assert mine.confluent()["reconnect.backoff.ms"] == "250"


@pytest.mark.parametrize("text, expected", [("true", True), ("False", False), (" TRUE ", True)])
def test_python_level_bool_property_from_text(text, expected):
    # confluent-kafka refuses the string "true" for this one; -X and files only give strings
    s = resolve(None, {"bootstrap.servers": "h:1", "delivery.report.only.error": text}, None, 10, env={})
    assert s.confluent()["delivery.report.only.error"] is expected


def test_python_level_bool_property_rejects_other_text():
    s = resolve(None, {"bootstrap.servers": "h:1", "delivery.report.only.error": "yes"}, None, 10, env={})
    with pytest.raises(ConfigError, match=r"delivery.report.only.error='yes' \(from -X "):
        s.confluent()


def test_kafka_python_mapping():
    kw = resolve(None, SECURE, None, 10, env={}).kafka_python()
    assert kw == {
        "bootstrap_servers": ["h1:9093", "h2:9093"],
        "request_timeout_ms": 10000,
        "bootstrap_timeout_ms": 10000,  # kafka-python's own default is 30 s, whatever --timeout says
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "s3cret",
        "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/client.pem",
        "ssl_keyfile": "/client.key",
        "ssl_password": "kp",
        "ssl_check_hostname": False,
    }


@pytest.mark.parametrize(
    "key, value",
    [
        ("sasl.oauthbearer.config", "scope=x"),
        ("ssl.keystore.location", "/ks.p12"),
        ("enable.ssl.certificate.verification", "false"),
    ],
)
def test_unmappable_connection_setting_is_an_error(key, value):
    s = resolve(["h:1"], {key: value}, None, None, env={})
    with pytest.raises(ConfigError, match=key):
        s.kafka_python()


def test_java_names_and_jaas(tmp_path):
    path = _file(
        tmp_path,
        "bootstrap.servers=h:9093\nsasl.mechanisms=PLAIN\nkey.serializer=org.X\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="bob" password="p w\\\\"d";\n',
    )
    s = resolve(None, {}, path, None, env={})
    assert s.props["sasl.mechanism"] == "PLAIN"
    assert s.props["sasl.username"] == "bob"
    assert s.props["sasl.password"] == 'p w"d'
    assert "key.serializer" not in s.props and "sasl.jaas.config" not in s.props


def test_bad_properties_file_names_file_and_line(tmp_path):
    path = _file(tmp_path, "ok=1\n=broken\n")
    with pytest.raises(ConfigError, match=r"client\.properties:2"):
        resolve(None, {}, path, None, env={})


def test_missing_properties_file():
    with pytest.raises(ConfigError, match="--command-config /nonexistent"):
        resolve(None, {}, "/nonexistent/x.properties", None, env={})


def test_redacted_hides_secrets():
    s = resolve(None, SECURE, None, None, env={})
    red = s.redacted()
    assert red["sasl.password"] == "***" and red["ssl.key.password"] == "***"
    assert red["sasl.username"] == "alice"
