"""Kafka error codes the simulated cluster answers with, as `KafkaError` exceptions.

Codes and default messages are Kafka's own (clients/.../common/protocol/Errors.java), so the wire server
can put `code` and `message` straight into a response.
"""

from __future__ import annotations

from typing import Final

NONE: Final = 0
UNKNOWN_SERVER_ERROR: Final = -1
UNKNOWN_TOPIC_OR_PARTITION: Final = 3
LEADER_NOT_AVAILABLE: Final = 5
NOT_LEADER_OR_FOLLOWER: Final = 6
BROKER_NOT_AVAILABLE: Final = 8
REPLICA_NOT_AVAILABLE: Final = 9
REQUEST_TIMED_OUT: Final = 7
INVALID_TOPIC_EXCEPTION: Final = 17
TOPIC_ALREADY_EXISTS: Final = 36
INVALID_PARTITIONS: Final = 37
INVALID_REPLICATION_FACTOR: Final = 38
INVALID_REPLICA_ASSIGNMENT: Final = 39
INVALID_CONFIG: Final = 40
NOT_CONTROLLER: Final = 41
INVALID_REQUEST: Final = 42
POLICY_VIOLATION: Final = 44
KAFKA_STORAGE_ERROR: Final = 56
LOG_DIR_NOT_FOUND: Final = 57
PREFERRED_LEADER_NOT_AVAILABLE: Final = 80
ELIGIBLE_LEADERS_NOT_AVAILABLE: Final = 83
ELECTION_NOT_NEEDED: Final = 84
NO_REASSIGNMENT_IN_PROGRESS: Final = 85
UNKNOWN_TOPIC_ID: Final = 100

DEFAULT_MESSAGES: Final[dict[int, str]] = {
    UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    LEADER_NOT_AVAILABLE: "There is no leader for this topic-partition as we are in the middle of a "
    "leadership election.",
    NOT_LEADER_OR_FOLLOWER: "For requests intended only for the leader, this error indicates that the broker "
    "is not the current leader.",
    BROKER_NOT_AVAILABLE: "The broker is not available.",
    REPLICA_NOT_AVAILABLE: "The replica is not available for the requested topic-partition.",
    REQUEST_TIMED_OUT: "The request timed out.",
    INVALID_TOPIC_EXCEPTION: "The request attempted to perform an operation on an invalid topic.",
    TOPIC_ALREADY_EXISTS: "Topic with this name already exists.",
    INVALID_PARTITIONS: "Number of partitions is below 1.",
    INVALID_REPLICATION_FACTOR: "Replication factor is below 1 or larger than the number of available "
    "brokers.",
    INVALID_REPLICA_ASSIGNMENT: "Replica assignment is invalid.",
    INVALID_CONFIG: "Configuration is invalid.",
    NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    INVALID_REQUEST: "This most likely occurs because of a request being malformed by the client library or "
    "the message was sent to an incompatible broker. See the broker logs for more details.",
    POLICY_VIOLATION: "Request parameters do not satisfy the configured policy.",
    KAFKA_STORAGE_ERROR: "Disk error when trying to access log file on the disk.",
    LOG_DIR_NOT_FOUND: "The user-specified log directory is not found in the broker config.",
    PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    NO_REASSIGNMENT_IN_PROGRESS: "No partition reassignment is in progress.",
    UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
}

NAMES: Final[dict[int, str]] = {
    code: name
    for name, code in list(globals().items())
    if name.isupper() and isinstance(code, int) and name not in ("NONE",) and not name.startswith("_")
}


class KafkaError(Exception):
    """A Kafka error as a response carries it: `code` and `message` (error_message).

    Without a message it carries the code's default text, as Kafka's `new ApiError(error)` does; `null=True`
    sends no message at all, as `new ApiError(error, null)` and ApiError.fromThrowable for
    UNKNOWN_SERVER_ERROR do.
    """

    def __init__(self, code: int, message: str | None = None, *, null: bool = False) -> None:
        self.code = code
        self.message: str | None = (
            None if null else message if message is not None else DEFAULT_MESSAGES.get(code, "")
        )
        super().__init__(f"{NAMES.get(code, str(code))}: {self.message}")

    @property
    def name(self) -> str:
        return NAMES.get(self.code, str(self.code))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KafkaError) and (self.code, self.message) == (other.code, other.message)

    def __hash__(self) -> int:
        return hash((self.code, self.message))

    def __repr__(self) -> str:
        return f"KafkaError({self.name}, {self.message!r})"
