"""Which reassignments in flight `recover --mode cleanup` cancels (engine/crosscheck.py): only those the
ownership marker and the cluster prove ours, never another tool's move on a topic our lost plan throttled."""

from __future__ import annotations

from types import MappingProxyType

from reassignd.engine.crosscheck import ClusterSide, Marker, cleanup, ours_in_flight
from reassignd.model import TopicPartition

LEADER, FOLLOWER = "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"


def test_a_foreign_move_on_a_partition_we_never_throttled_is_not_cancelled() -> None:
    """Our lost plan moved t-0 and t-1 (their entries are on the topic's throttled-replicas lists, added
    to an operator's own t-5 entry); `kafka-reassign-partitions` (no --throttle) moves t-3 meanwhile. On
    main every reassignment on topic t counted as ours, and cleanup cancelled the operator's t-3 move."""
    marker = Marker(
        seq=15,
        plan="plan-lost",
        state="running",
        written=MappingProxyType({("topic", "t", LEADER): "5:1", ("topic", "t", FOLLOWER): None}),
    )
    cluster = ClusterSide(
        in_flight=frozenset({TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 3)}),
        configs={("topic", "t", LEADER): "5:1,0:1,0:2,1:2,1:3", ("topic", "t", FOLLOWER): "0:4,1:5"},
    )
    assert ours_in_flight(marker, cluster) == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert cleanup(marker, cluster).cancel == (TopicPartition("t", 0), TopicPartition("t", 1))


def test_a_wildcard_list_cannot_tell_so_every_move_on_the_topic_counts() -> None:
    marker = Marker(
        seq=15, plan="p", state="running", written=MappingProxyType({("topic", "t", LEADER): None})
    )
    cluster = ClusterSide(
        in_flight=frozenset({TopicPartition("t", 3)}), configs={("topic", "t", LEADER): "*"}
    )
    assert ours_in_flight(marker, cluster) == (TopicPartition("t", 3),)
