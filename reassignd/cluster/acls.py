"""The Kafka ACLs reassignd's principal needs, one place for the error hints, the docs and the tests.

Measured on Kafka 4.4 with KRaft's StandardAuthorizer (tests/realkafka/test_security.py removes each in turn
and sees the call it guards refused): Metadata and DescribeCluster need no ACL on the cluster (Metadata
leaves out the topics the principal may not describe), everything else below does. Kafka implies DESCRIBE
from ALTER and DESCRIBE_CONFIGS from ALTER_CONFIGS on the same resource, so a grant of only ALTER and
ALTER_CONFIGS on CLUSTER covers all four CLUSTER rows; they are listed apart to say which call needs what.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True, order=True)
class Acl:
    """An operation on a resource type, as Kafka names them (`kafka-acls --operation Describe`: DESCRIBE)."""

    operation: str
    resource: str

    def __str__(self) -> str:
        return f"{self.operation} on {self.resource}"

    @property
    def implied_by(self) -> tuple[Acl, ...]:
        """The ACLs that grant this one too (Kafka's AclOperation implication on the same resource)."""
        stronger = {"DESCRIBE": ("ALTER",), "DESCRIBE_CONFIGS": ("ALTER_CONFIGS",)}.get(self.operation, ())
        return tuple(Acl(op, self.resource) for op in stronger)


@dataclass(frozen=True, slots=True)
class AclNeed:
    """One ACL, the adapter calls (api labels, as in metrics) it guards, why, and which features need it."""

    acl: Acl
    apis: tuple[str, ...]
    kafka_requests: str
    why: str
    features: str


DESCRIBE_CLUSTER = Acl("DESCRIBE", "CLUSTER")
DESCRIBE_CONFIGS_CLUSTER = Acl("DESCRIBE_CONFIGS", "CLUSTER")
ALTER_CONFIGS_CLUSTER = Acl("ALTER_CONFIGS", "CLUSTER")
ALTER_CLUSTER = Acl("ALTER", "CLUSTER")
DESCRIBE_TOPIC = Acl("DESCRIBE", "TOPIC")
DESCRIBE_CONFIGS_TOPIC = Acl("DESCRIBE_CONFIGS", "TOPIC")
ALTER_CONFIGS_TOPIC = Acl("ALTER_CONFIGS", "TOPIC")
READ_GROUP = Acl("READ", "GROUP")

# The writer group's name is this prefix and the cluster id Kafka reports (daemon/writer.py); its ACL is
# granted on the prefix, so one grant serves every cluster.
WRITER_GROUP_PREFIX: Final = "reassignd."

NEEDS: Final[tuple[AclNeed, ...]] = (
    AclNeed(
        DESCRIBE_CLUSTER,
        ("list_partition_reassignments", "describe_log_dirs"),
        "ListPartitionReassignments, DescribeLogDirs",
        "see the moves in flight (ours and others'); read replica sizes and log dirs",
        "every plan: progress, ETA, limits; verify, snapshot",
    ),
    AclNeed(
        DESCRIBE_CONFIGS_CLUSTER,
        ("describe_configs",),
        "DescribeConfigs (broker)",
        "read the brokers' throttle rates before changing them, to restore them byte-identical",
        "throttles; snapshot",
    ),
    AclNeed(
        ALTER_CONFIGS_CLUSTER,
        ("incremental_alter_configs",),
        "IncrementalAlterConfigs (broker)",
        "set and restore `leader/follower.replication.throttled.rate` and "
        "`replica.alter.log.dirs.io.max.bytes.per.second` on the brokers",
        "throttles, log-dir moves",
    ),
    AclNeed(
        ALTER_CLUSTER,
        ("alter_partition_reassignments", "elect_leaders", "alter_replica_log_dirs"),
        "AlterPartitionReassignments, ElectLeaders, AlterReplicaLogDirs",
        "start and cancel each step, move leadership back to the preferred replica, move replicas "
        "between a broker's log dirs",
        "every plan; cancel; log-dir moves",
    ),
    AclNeed(
        DESCRIBE_TOPIC,
        ("list_topics",),
        "Metadata",
        "see the plan's topics: replicas, leaders, ISR (a topic the principal may not describe is left out "
        "of Metadata, and reported as not authorized when named)",
        "every plan; verify, snapshot",
    ),
    AclNeed(
        DESCRIBE_CONFIGS_TOPIC,
        ("describe_configs",),
        "DescribeConfigs (topic)",
        "read `*.replication.throttled.replicas` and `min.insync.replicas` of the plan's topics",
        "throttles, the min-ISR guard; snapshot",
    ),
    AclNeed(
        ALTER_CONFIGS_TOPIC,
        ("incremental_alter_configs",),
        "IncrementalAlterConfigs (topic)",
        "add and remove the moving replicas in `leader/follower.replication.throttled.replicas`",
        "throttles",
    ),
    AclNeed(
        READ_GROUP,
        ("find_coordinator",),
        "FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup (group `reassignd.<cluster id>`)",
        "take part in the writer group that lets one reassignd write to the cluster (docs/ha.md)",
        "every write: plans, throttles, cancel",
    ),
)


def required_for(api: str) -> tuple[Acl, ...]:
    """The ACLs an adapter call (its api label) needs; empty for calls that need none."""
    return tuple(need.acl for need in NEEDS if api in need.apis)
