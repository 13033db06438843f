"""Client settings: one librdkafka-style dict from the operator, translated for kafka-python.

Operators write the property names they know from librdkafka and the Java client (`security.protocol`,
`ssl.ca.location`, `sasl.username`, ...). confluent-kafka takes them as they are; kafka-python wants its own
keyword names. A security setting that cannot be carried over is an error, never silently dropped: the two
clients must reach the cluster the same way, or the second one would connect without TLS or fail later
with a confusing error. Secrets are redacted wherever settings are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from reassignd.model import InvalidInputError, Problem


def _text(value: str) -> str:
    return value


def _protocol(value: str) -> str:
    return value.upper()


def _mechanism(value: str) -> str:
    return value.upper()


def _hostname_check(value: str) -> bool:
    # librdkafka: ssl.endpoint.identification.algorithm = https | none
    lowered = value.lower()
    if lowered not in ("https", "none", ""):
        raise ValueError(f"must be 'https' or 'none', got {value!r}")
    return lowered == "https"


def _milliseconds(value: str) -> int:
    number = int(value)
    if number <= 0:
        raise ValueError(f"must be a positive number of milliseconds, got {value!r}")
    return number


# librdkafka name -> (kafka-python keyword, converter)
KAFKA_PYTHON_NAMES: Final[Mapping[str, tuple[str, Callable[[str], Any]]]] = {
    "bootstrap.servers": ("bootstrap_servers", _text),
    "client.id": ("client_id", _text),
    "security.protocol": ("security_protocol", _protocol),
    "ssl.ca.location": ("ssl_cafile", _text),
    "ssl.certificate.location": ("ssl_certfile", _text),
    "ssl.key.location": ("ssl_keyfile", _text),
    "ssl.key.password": ("ssl_password", _text),
    "ssl.crl.location": ("ssl_crlfile", _text),
    "ssl.endpoint.identification.algorithm": ("ssl_check_hostname", _hostname_check),
    "sasl.mechanism": ("sasl_mechanism", _mechanism),
    "sasl.mechanisms": ("sasl_mechanism", _mechanism),
    "sasl.username": ("sasl_plain_username", _text),
    "sasl.password": ("sasl_plain_password", _text),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", _text),
    "request.timeout.ms": ("request_timeout_ms", _milliseconds),
    "metadata.max.age.ms": ("metadata_max_age_ms", _milliseconds),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", _milliseconds),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", _milliseconds),
    "retry.backoff.ms": ("retry_backoff_ms", _milliseconds),
}

# Prefixes whose keys change how we authenticate or encrypt: unknown ones are refused, not dropped.
_SECURITY_PREFIXES: Final = ("security.", "ssl.", "sasl.")

_SUPPORTED_SECURITY_KEYS: Final = ", ".join(
    sorted(k for k in KAFKA_PYTHON_NAMES if k.startswith(_SECURITY_PREFIXES))
)
_SECRET_MARKERS: Final = ("password", "secret", "jaas", "oauthbearer.config", "key.pem", "token")
REDACTED: Final = "[redacted]"


def is_secret(key: str) -> bool:
    lowered = key.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def redact(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy fit for logs: secret values replaced, keys kept so the operator sees what was set."""
    return {key: (REDACTED if is_secret(key) else value) for key, value in settings.items()}


def to_kafka_python(settings: Mapping[str, str]) -> dict[str, Any]:
    """librdkafka-style settings -> kafka-python KafkaAdminClient keyword arguments.

    Non-security keys kafka-python has no equivalent for (librdkafka tuning such as `socket.keepalive.enable`
    or `debug`) apply to confluent-kafka only. Unknown security keys raise, listing every one.
    """
    problems: list[Problem] = []
    out: dict[str, Any] = {}
    for key in sorted(settings):
        raw = settings[key]
        shown = REDACTED if is_secret(key) else raw
        if not isinstance(raw, str):
            problems.append(Problem("client settings", key, f"must be a string, got {shown!r}"))
            continue
        target = KAFKA_PYTHON_NAMES.get(key)
        if target is None:
            if key.startswith(_SECURITY_PREFIXES):
                problems.append(
                    Problem(
                        "client settings",
                        key,
                        "is not supported by kafka-python (used for reassignments and log dirs); "
                        f"supported security keys: {_SUPPORTED_SECURITY_KEYS}",
                    )
                )
            continue
        name, convert = target
        try:
            out[name] = convert(raw)
        except ValueError as exc:
            message = str(exc) if not is_secret(key) else "has an invalid value"
            problems.append(Problem("client settings", key, message))
    if "bootstrap_servers" in out:
        out["bootstrap_servers"] = [s.strip() for s in out["bootstrap_servers"].split(",") if s.strip()]
    if problems:
        raise InvalidInputError("client settings", problems)
    return out


def validate_settings(settings: Mapping[str, str]) -> None:
    """Raise InvalidInputError with every problem; a missing bootstrap.servers is one of them."""
    problems: list[Problem] = []
    servers = settings.get("bootstrap.servers", "")
    if not isinstance(servers, str) or not servers.strip():
        problems.append(
            Problem("client settings", "bootstrap.servers", f"must be host:port[,...], got {servers!r}")
        )
    try:
        to_kafka_python(settings)
    except InvalidInputError as exc:
        problems.extend(exc.problems)
    if problems:
        raise InvalidInputError("client settings", problems)
