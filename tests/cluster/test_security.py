"""librdkafka-style client settings -> kafka-python keywords, and secrets kept out of logs."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.cluster.security import REDACTED, redact, to_kafka_python, validate_settings
from reassignd.model import InvalidInputError


@pytest.mark.parametrize(
    ("librdkafka", "kafka_python"),
    [
        ({"bootstrap.servers": "a:9092, b:9093"}, {"bootstrap_servers": ["a:9092", "b:9093"]}),
        ({"security.protocol": "sasl_ssl"}, {"security_protocol": "SASL_SSL"}),
        ({"ssl.ca.location": "/etc/ca.pem"}, {"ssl_cafile": "/etc/ca.pem"}),
        ({"ssl.certificate.location": "/c.pem"}, {"ssl_certfile": "/c.pem"}),
        ({"ssl.key.location": "/k.pem"}, {"ssl_keyfile": "/k.pem"}),
        ({"ssl.key.password": "pw"}, {"ssl_password": "pw"}),
        ({"ssl.crl.location": "/crl.pem"}, {"ssl_crlfile": "/crl.pem"}),
        ({"ssl.endpoint.identification.algorithm": "https"}, {"ssl_check_hostname": True}),
        ({"ssl.endpoint.identification.algorithm": "none"}, {"ssl_check_hostname": False}),
        ({"sasl.mechanism": "scram-sha-512"}, {"sasl_mechanism": "SCRAM-SHA-512"}),
        ({"sasl.mechanisms": "PLAIN"}, {"sasl_mechanism": "PLAIN"}),
        ({"sasl.username": "u"}, {"sasl_plain_username": "u"}),
        ({"sasl.password": "p"}, {"sasl_plain_password": "p"}),
        ({"sasl.kerberos.service.name": "kafka"}, {"sasl_kerberos_service_name": "kafka"}),
        ({"client.id": "me"}, {"client_id": "me"}),
        ({"request.timeout.ms": "5000"}, {"request_timeout_ms": 5000}),
        # librdkafka-only tuning: for confluent-kafka only, not an error.
        ({"socket.keepalive.enable": "true", "debug": "admin"}, {}),
    ],
)
def test_mapping(librdkafka: dict[str, str], kafka_python: dict[str, Any]) -> None:
    assert to_kafka_python(librdkafka) == kafka_python


@pytest.mark.parametrize(
    ("settings", "bad_keys"),
    [
        ({"sasl.oauthbearer.config": "x"}, ["sasl.oauthbearer.config"]),
        (
            {"ssl.keystore.location": "/ks.p12", "ssl.engine.id": "e"},
            ["ssl.engine.id", "ssl.keystore.location"],
        ),
        ({"ssl.endpoint.identification.algorithm": "maybe"}, ["ssl.endpoint.identification.algorithm"]),
        ({"request.timeout.ms": "-1"}, ["request.timeout.ms"]),
        ({"request.timeout.ms": "soon"}, ["request.timeout.ms"]),
    ],
)
def test_settings_that_cannot_be_carried_over_are_refused(
    settings: dict[str, str], bad_keys: list[str]
) -> None:
    with pytest.raises(InvalidInputError) as info:
        to_kafka_python(settings)
    assert sorted(p.field for p in info.value.problems) == bad_keys


def test_validate_requires_bootstrap_servers_and_lists_every_problem() -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_settings({"ssl.engine.id": "x"})
    assert {p.field for p in info.value.problems} == {"bootstrap.servers", "ssl.engine.id"}


def test_secrets_are_redacted_and_never_in_error_messages() -> None:
    settings = {
        "bootstrap.servers": "a:1",
        "sasl.username": "alice",
        "sasl.password": "hunter2",
        "ssl.key.password": "s3cret",
        "sasl.jaas.config": "org.apache... password=topsecret",
    }
    shown = redact(settings)
    assert shown["sasl.username"] == "alice"
    assert shown["bootstrap.servers"] == "a:1"
    for key in ("sasl.password", "ssl.key.password", "sasl.jaas.config"):
        assert shown[key] == REDACTED
    with pytest.raises(InvalidInputError) as info:
        to_kafka_python({"sasl.password": 1234567})  # type: ignore[dict-item]
    assert "1234567" not in str(info.value)
