"""One error vocabulary for both client libraries.

librdkafka and kafka-python name the same Kafka error differently (UNKNOWN_TOPIC_OR_PART vs
UNKNOWN_TOPIC_OR_PARTITION) and disagree on which are retriable. Callers of the adapter must not care
which library answered, so every error is normalised here to Kafka's own name (by code, from the
protocol's error table) and one retriable flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from reassignd.cluster._kafka_python import kafka_errors

# librdkafka's local (negative) codes that mean "the cluster was not reachable in time": worth retrying.
_RETRIABLE_LOCAL_NAMES: Final = frozenset(
    {
        "_TRANSPORT",
        "_TIMED_OUT",
        "_ALL_BROKERS_DOWN",
        "_WAIT_COORD",
        "_TIMED_OUT_QUEUE",
        "_RESOLVE",
        "_NODE_UPDATE",
        "_LEADER_CHANGE",
        "_BROKER_NOT_AVAILABLE",
    }
)

# Kafka codes kafka-python does not flag retriable but that are transient for an admin call.
_ALSO_RETRIABLE_CODES: Final = frozenset({8})  # BROKER_NOT_AVAILABLE

# Where kafka-python's error table spells a name differently from Kafka's Errors.java.
_KAFKA_NAMES: Final = {39: "INVALID_REPLICA_ASSIGNMENT"}

REQUEST_TIMED_OUT: Final = "REQUEST_TIMED_OUT"
ELECTION_NOT_NEEDED: Final = "ELECTION_NOT_NEEDED"
NO_REASSIGNMENT_IN_PROGRESS: Final = "NO_REASSIGNMENT_IN_PROGRESS"
UNKNOWN_TOPIC_OR_PARTITION: Final = "UNKNOWN_TOPIC_OR_PARTITION"


@dataclass(frozen=True, slots=True)
class KafkaErrorInfo:
    """A Kafka error as data: Kafka's name for it, its protocol code (None for client-side errors)."""

    name: str
    code: int | None
    retriable: bool
    message: str = ""

    def __str__(self) -> str:
        return f"{self.name}: {self.message}" if self.message and self.message != self.name else self.name


class ClusterCallError(Exception):
    """An admin call failed as a whole; `error.retriable` says whether trying again can help."""

    def __init__(self, api: str, error: KafkaErrorInfo) -> None:
        self.api = api
        self.error = error
        super().__init__(f"{api} failed: {error}")

    @property
    def name(self) -> str:
        return self.error.name

    @property
    def retriable(self) -> bool:
        return self.error.retriable


class WriteFenced(Exception):
    """The write fence refused a write before anything was sent; never retried, never wrapped."""


def error_for_code(code: int, message: str = "") -> KafkaErrorInfo:
    """Kafka's name and retriability for a protocol error code."""
    error_class = kafka_errors.for_code(code)
    known = code in kafka_errors.kafka_errors
    name = str(getattr(error_class, "message", "")) if known else f"KAFKA_ERROR_{code}"
    name = _KAFKA_NAMES.get(code, name)
    retriable = bool(getattr(error_class, "retriable", False)) or code in _ALSO_RETRIABLE_CODES
    return KafkaErrorInfo(name=name, code=code, retriable=retriable, message=message or name)


def from_librdkafka(error: Any) -> KafkaErrorInfo:
    """A confluent_kafka.KafkaError (or a KafkaException wrapping one)."""
    if hasattr(error, "args") and error.args and hasattr(error.args[0], "code"):
        error = error.args[0]
    code = int(error.code())
    message = str(error.str())
    if code >= 0:
        info = error_for_code(code, message)
        return KafkaErrorInfo(info.name, code, info.retriable or bool(error.retriable()), message)
    name = str(error.name())
    retriable = name in _RETRIABLE_LOCAL_NAMES or bool(error.retriable())
    return KafkaErrorInfo(name=name, code=None, retriable=retriable, message=message)


def from_kafka_python(error: BaseException | type[BaseException]) -> KafkaErrorInfo:
    """A kafka.errors.KafkaError class or instance (per-item results are classes, raised ones instances)."""
    error_class = error if isinstance(error, type) else type(error)
    message = "" if isinstance(error, type) else str(error)
    errno = getattr(error_class, "errno", None)
    if isinstance(errno, int) and errno >= 0:
        return error_for_code(errno, message)
    name = str(getattr(error_class, "message", "") or error_class.__name__)
    if issubclass(error_class, kafka_errors.KafkaTimeoutError):
        name = REQUEST_TIMED_OUT
    # UnknownBrokerIdError: the client's metadata dropped a broker it still routes to (a stopped
    # controller); the adapter replaces the client, and a new one finds the live broker
    retriable = bool(getattr(error_class, "retriable", False)) or issubclass(
        error_class,
        (
            kafka_errors.KafkaTimeoutError,
            kafka_errors.KafkaConnectionError,
            kafka_errors.UnknownBrokerIdError,
        ),
    )
    return KafkaErrorInfo(name=name, code=None, retriable=retriable, message=message or name)


def from_exception(error: BaseException) -> KafkaErrorInfo:
    """Whatever a client library raised, as data; unknown exceptions are not retriable."""
    if isinstance(error, ClusterCallError):
        return error.error
    if type(error).__module__.startswith("confluent_kafka") or type(error).__name__ == "KafkaException":
        try:
            return from_librdkafka(error)
        except (AttributeError, TypeError, ValueError):
            pass
    if isinstance(error, kafka_errors.KafkaError):
        return from_kafka_python(error)
    if isinstance(error, TimeoutError):
        return KafkaErrorInfo(REQUEST_TIMED_OUT, None, True, str(error) or "timed out")
    if isinstance(error, ConnectionError | OSError):
        return KafkaErrorInfo("NETWORK_EXCEPTION", 13, True, str(error))
    return KafkaErrorInfo(type(error).__name__, None, False, str(error))
