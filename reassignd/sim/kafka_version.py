"""Which Kafka the simulator pretends to be: a release and a controller mode, and the API versions it serves.

A scenario's `kafka: {"version": "3.9", "mode": "zookeeper"}` picks the row below; without it the newest
KRaft release is simulated. The mode decides the controller semantics (reassignd/sim/zk_controller.py for
ZooKeeper, reassignd/sim/reassignment.py for KRaft); the release decides the advertised ApiVersions.

Sources of the version table, per release (apache/kafka, `validVersions` in
clients/src/main/resources/common/message/*Request.json; none of these APIs has an unstable latest version):
- 3.7 (tag 3.7.0), 3.8 (tag 3.8.0), 3.9 (branch 3.9): read from the schema files at that revision. ApiVersions
  v4 is new in 3.9. The same versions are served by ZooKeeper-mode and KRaft brokers (every one of these
  schemas lists both `zkBroker` and `broker` listeners).
- 4.0: KIP-896 removed old versions (the schema comments "Version 0 was removed in Apache Kafka 4.0":
  DescribeConfigs, DeleteTopics, DescribeLogDirs, AlterReplicaLogDirs; CreateTopics v0-1); Metadata v13
  (KIP-1102) and DescribeCluster v2 (KIP-1073, apache/kafka commit 747dc172, December 2024) are new.
- 4.1: AlterPartitionReassignments v1 (KIP-860, AllowReplicationFactorChange; the 4.1 Admin javadoc is the
  first with AlterPartitionReassignmentsOptions.allowReplicationFactorChange).
- 4.4: measured, not read: the ApiVersions answer of a real 4.4.0 KRaft broker
  (tests/realkafka/test_fidelity.py) differs from 4.1, for the APIs served here, in DescribeLogDirs v5
  (KIP-1066, IsCordoned; LogDirDescription.isCordoned first appears in the 4.3 javadoc) and ApiVersions v5.
  kafka-python's schemas end at ApiVersions v4, so v0-4 is advertised (a broker must decode what it
  advertises); with DescribeLogDirs v5 kafka-python infers broker release 4.3 from our list, as it does from
  a real 4.4 broker's (it has no 4.4 test case).
DescribeLogDirs v5 is not in 4.1. ZooKeeper mode ends with 3.9 (4.0 removed it).
Group coordination (FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup; reassignd's one-writer
lease): read at tags 3.7.0 and 3.8.0 and branch 3.9 (FindCoordinator v5 is new in 3.8, KIP-890; v6 in 3.9,
KIP-932); 4.0.0 removed JoinGroup v0-1 (KIP-896), and 4.0.1 and 4.1.0 added them back (KAFKA-19444,
apache/kafka pull request 20116: older librdkafka with Kerberos sends v0-1), as a real 4.4.0 broker
advertises (0-9, tests/realkafka/test_fidelity.py); the 4.0 row is 4.0.0's.
OffsetCommit and OffsetFetch (the writer's ownership marker): 0-9 at tags 3.7.0 and 3.8.0; KIP-896 removed
OffsetCommit v0-1 and OffsetFetch v0 in 4.0. Served here: OffsetCommit up to v9 (v10 names topics by id)
and OffsetFetch up to v7 (v8+ is the multi-group layout, not modelled), from OffsetCommit v2 and OffsetFetch
v1 in every release (kafka-python's schemas start there, as 4.0's do); reassignd asks for v2-9 and v1-7.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

KRAFT: Final = "kraft"
ZOOKEEPER: Final = "zookeeper"
MODES: Final = (KRAFT, ZOOKEEPER)

# Kafka's ApiKeys ids of the APIs the simulator serves.
METADATA: Final = 3
API_VERSIONS: Final = 18
CREATE_TOPICS: Final = 19
DELETE_TOPICS: Final = 20
DESCRIBE_CONFIGS: Final = 32
ALTER_CONFIGS: Final = 33
ALTER_REPLICA_LOG_DIRS: Final = 34
DESCRIBE_LOG_DIRS: Final = 35
ELECT_LEADERS: Final = 43
INCREMENTAL_ALTER_CONFIGS: Final = 44
ALTER_PARTITION_REASSIGNMENTS: Final = 45
LIST_PARTITION_REASSIGNMENTS: Final = 46
DESCRIBE_CLUSTER: Final = 60
FIND_COORDINATOR: Final = 10
JOIN_GROUP: Final = 11
HEARTBEAT: Final = 12
LEAVE_GROUP: Final = 13
SYNC_GROUP: Final = 14
OFFSET_COMMIT: Final = 8
OFFSET_FETCH: Final = 9

_KAFKA_3: Final = {
    METADATA: (0, 12),
    API_VERSIONS: (0, 3),
    CREATE_TOPICS: (0, 7),
    DELETE_TOPICS: (0, 6),
    DESCRIBE_CONFIGS: (0, 4),
    ALTER_CONFIGS: (0, 2),
    ALTER_REPLICA_LOG_DIRS: (0, 2),
    DESCRIBE_LOG_DIRS: (0, 4),
    ELECT_LEADERS: (0, 2),
    INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    LIST_PARTITION_REASSIGNMENTS: (0, 0),
    DESCRIBE_CLUSTER: (0, 1),
    FIND_COORDINATOR: (0, 4),
    JOIN_GROUP: (0, 9),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 5),
    SYNC_GROUP: (0, 5),
    OFFSET_COMMIT: (2, 9),
    OFFSET_FETCH: (1, 7),
}
_KAFKA_3_8: Final = {**_KAFKA_3, FIND_COORDINATOR: (0, 5)}
_KAFKA_3_9: Final = {**_KAFKA_3, API_VERSIONS: (0, 4), FIND_COORDINATOR: (0, 6)}
_KAFKA_4_0: Final = {
    **_KAFKA_3_9,
    METADATA: (0, 13),
    CREATE_TOPICS: (2, 7),
    DELETE_TOPICS: (1, 6),
    DESCRIBE_CONFIGS: (1, 4),
    ALTER_REPLICA_LOG_DIRS: (1, 2),
    DESCRIBE_LOG_DIRS: (1, 4),
    DESCRIBE_CLUSTER: (0, 2),
    JOIN_GROUP: (2, 9),
}
_KAFKA_4_1: Final = {**_KAFKA_4_0, ALTER_PARTITION_REASSIGNMENTS: (0, 1), JOIN_GROUP: (0, 9)}
_KAFKA_4_4: Final = {**_KAFKA_4_1, DESCRIBE_LOG_DIRS: (1, 5)}

API_VERSIONS_BY_RELEASE: Final[Mapping[str, Mapping[int, tuple[int, int]]]] = MappingProxyType(
    {
        "3.7": MappingProxyType(_KAFKA_3),
        "3.8": MappingProxyType(_KAFKA_3_8),
        "3.9": MappingProxyType(_KAFKA_3_9),
        "4.0": MappingProxyType(_KAFKA_4_0),
        "4.1": MappingProxyType(_KAFKA_4_1),
        "4.4": MappingProxyType(_KAFKA_4_4),
    }
)
RELEASES: Final = tuple(API_VERSIONS_BY_RELEASE)
NEWEST: Final = RELEASES[-1]
LAST_WITH_ZOOKEEPER: Final = "3.9"


class KafkaVersionError(ValueError):
    """An unknown release or mode, or ZooKeeper mode on a release without it; `field` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


@dataclass(frozen=True, slots=True)
class KafkaVersion:
    """A Kafka release ("3.9") and its controller mode ("kraft" or "zookeeper")."""

    release: str = NEWEST
    mode: str = KRAFT

    def __post_init__(self) -> None:
        if self.release not in API_VERSIONS_BY_RELEASE:
            raise KafkaVersionError(
                "version", f"unknown Kafka release {self.release!r} (supported: {', '.join(RELEASES)})"
            )
        if self.mode not in MODES:
            raise KafkaVersionError("mode", f"must be one of {list(MODES)}, got {self.mode!r}")
        if self.mode == ZOOKEEPER and _release_key(self.release) > _release_key(LAST_WITH_ZOOKEEPER):
            raise KafkaVersionError(
                "mode",
                f"Kafka {self.release} has no ZooKeeper mode (removed in 4.0; the last release with it is "
                f"{LAST_WITH_ZOOKEEPER})",
            )

    @property
    def zookeeper(self) -> bool:
        return self.mode == ZOOKEEPER

    @property
    def api_versions(self) -> Mapping[int, tuple[int, int]]:
        """API key to the (min, max) versions a broker of this release advertises, for the APIs served."""
        return API_VERSIONS_BY_RELEASE[self.release]

    def to_dict(self) -> dict[str, str]:
        return {"version": self.release, "mode": self.mode}

    def __str__(self) -> str:
        return f"Kafka {self.release} ({'ZooKeeper' if self.zookeeper else 'KRaft'})"


DEFAULT: Final = KafkaVersion()
