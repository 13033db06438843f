"""Issue 31, the store cross-checked against the cluster, on a real KRaft cluster.

The ownership marker is the writer group's committed offset on `__consumer_offsets` partition 0
(cluster/marker.py): a real broker accepts it from the writer's member of a group of protocol type
`reassignd`, refuses it from a stranger while the group has members, and gives it back. A daemon killed
mid-plan and started on an empty state dir (a lost store) holds every write with a finding, and
`reassignd recover --mode cleanup` leaves no move in flight and every throttle config as before the plan.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from reassignd.cluster.errors import WriteFenced
from reassignd.cluster.group import GroupTransport
from reassignd.cluster.marker import KafkaMarker, MarkerError
from reassignd.engine.crosscheck import Marker
from reassignd.localkafka.cluster import KafkaCluster
from reassignd.localkafka.load import fill
from tests.realkafka.conftest import SHORT_QUOTA_WINDOW, create_topic, wait_for
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

KAFKA_BROKER_PROPERTIES = SHORT_QUOTA_WINDOW  # copies at 1 MB/s stay in flight for seconds (conftest.py)

# 400 kB/s: a 24 MiB copy takes about a minute, so both are still in flight when cleanup runs on a loaded
# box (at 1 MB/s both had finished once, after the restart, the 10-s session and four CLI starts)
RATES = {"leader.reassignment.throttled.rate": 400_000, "follower.reassignment.throttled.rate": 400_000}
UNKNOWN_MEMBER_ID = 25


Member = tuple[str, int]


def _marker(
    cluster: KafkaCluster, group: str, member: Member | Callable[[], Member] = ("", -1)
) -> KafkaMarker:
    """A marker writing as `member` (member id, generation), or as whoever `member()` says at each try."""
    transport = GroupTransport({"bootstrap_servers": cluster.bootstrap_servers, "client_id": "test-marker"})
    current = member if callable(member) else lambda: member
    return KafkaMarker(transport, lambda: (group, None, *current()))


def test_the_marker_round_trips_through_a_real_coordinator(kafka_cluster: KafkaCluster) -> None:
    marker = _marker(kafka_cluster, "reassignd.marker-round-trip")
    try:
        assert marker.read() is None
        text = Marker(seq=41, plan="p", state="running", written={("broker", "1", "k"): None}).encode()
        marker.write(41, text)
        assert marker.read() == (41, text)
        big = Marker(seq=42, written={("topic", f"t{i:04}", "k"): "0:1" * 20 for i in range(400)}).encode()
        assert len(big.encode()) <= 4000
        marker.write(42, big)  # within offset.metadata.max.bytes (4096): accepted
        assert Marker.decode(marker.read()[1]).partial  # type: ignore[index]
        with pytest.raises(MarkerError) as refused:
            marker.write(43, "x" * 5000)
        assert refused.value.code == 12  # OFFSET_METADATA_TOO_LARGE
    finally:
        marker.close()


class Joined(NamedTuple):
    transport: GroupTransport
    coordinator: int
    member_id: str
    generation: int


@contextlib.contextmanager
def _joined(cluster: KafkaCluster, group: str) -> Iterator[Joined]:
    """A member of `group` that has joined and not synced (the group is CompletingRebalance), once the
    cluster's first FindCoordinator has created `__consumer_offsets` and its coordinator has loaded."""
    transport = GroupTransport({"bootstrap_servers": cluster.bootstrap_servers, "client_id": "test-member"})
    joining: dict[str, Any] = {
        "group": group,
        "protocol_type": "reassignd",
        "protocols": [("writer-v1", b"{}")],
        "session_ms": 10_000,
        "rebalance_ms": 10_000,
        "timeout_seconds": 15,
    }
    answers: list[tuple[int, Any]] = []

    def joined() -> bool:
        error, node = transport.find_coordinator(group, 10)
        if error != 0:
            return False
        answer = transport.join(node, member_id="", **joining)
        if int(answer.error_code) == 79:  # MEMBER_ID_REQUIRED, KIP-394
            answer = transport.join(node, member_id=str(answer.member_id), **joining)
        answers.append((node, answer))
        return int(answer.error_code) == 0

    try:
        wait_for(joined, 30, f"a member of {group}")
        node, answer = answers[-1]
        yield Joined(transport, node, str(answer.member_id), int(answer.generation_id))
    finally:
        transport.close()


def test_the_writers_marker_waits_out_the_rebalance_its_member_joined(kafka_cluster: KafkaCluster) -> None:
    """Between a member's JoinGroup answer and its SyncGroup the group is CompletingRebalance, and Kafka
    answers a commit in the new generation REBALANCE_IN_PROGRESS (ClassicGroup.validateOffsetCommit). The
    writer rejoins when its group's coordinator moves (a broker killed mid-drain): its marker must wait for
    the sync, as a consumer's commit does, not fail the cycle."""
    group = "reassignd.marker-completing-rebalance"
    with _joined(kafka_cluster, group) as member:
        marker = _marker(kafka_cluster, group, (member.member_id, member.generation))
        synced: list[int] = []

        def sync_later() -> None:
            time.sleep(1.0)
            answer = member.transport.sync(
                member.coordinator,
                group=group,
                generation=member.generation,
                member_id=member.member_id,
                protocol_type="reassignd",
                protocol_name="writer-v1",
                assignments={member.member_id: b"{}"},
                timeout_seconds=15,
            )
            synced.append(int(answer.error_code))

        syncing = threading.Thread(target=sync_later)
        syncing.start()
        try:
            started = time.monotonic()
            marker.write(7, "completing")  # the group is CompletingRebalance for the next second
            waited = time.monotonic() - started
            assert marker.read() == (7, "completing")
        finally:
            syncing.join()
            marker.close()
    assert synced == [0]
    assert waited >= 0.5, f"written {waited:.2f} s after the join: the group was not CompletingRebalance"


@pytest.mark.parametrize("lapse", ["unknown to the writer", "just after the check"])
def test_a_marker_written_as_a_member_kafka_no_longer_knows_is_fenced(
    kafka_cluster: KafkaCluster, lapse: str
) -> None:
    """The writer's member left the group (its session expired, or it left), and the group is Empty.
    Unknown to the writer: Kafka answers the commit UNKNOWN_MEMBER_ID, and the right has lapsed
    (WriteFenced, which the daemon takes for a lapsed right), not a MarkerError failing the cycle. Just
    after the write checked the membership, the right lapses: the commit goes as the member it checked,
    never with the lapsed right's no member and generation -1, which Kafka stores once the group is Empty.
    Fresh-clone runs met both, the member leaving between the marker's read of its membership and its
    commit."""
    group = f"reassignd.marker-{'unknown-member' if lapse.startswith('unknown') else 'lapse-after-check'}"
    with _joined(kafka_cluster, group) as member:
        member.transport.leave(member.coordinator, group, member.member_id, 10)  # the group is Empty
        asked: list[int] = []

        def membership() -> Member:
            asked.append(1)  # the write's first reading, then its check's: a lapse comes after them
            lapsed = lapse == "just after the check" and len(asked) > 2
            return ("", -1) if lapsed else (member.member_id, member.generation)

        marker = _marker(kafka_cluster, group, membership)
        try:
            with pytest.raises(WriteFenced):
                marker.write(8, lapse)
            assert marker.read() is None
        finally:
            marker.close()


def test_a_marker_waiting_out_a_rebalance_is_not_written_once_the_writer_right_lapsed(
    kafka_cluster: KafkaCluster,
) -> None:
    """A writer whose right lapses while its marker waits out a rebalance asks with no member and
    generation -1, which Kafka stores once the group is Empty: the wait ends fenced, nothing written."""
    group = "reassignd.marker-lapsed-right"
    with _joined(kafka_cluster, group) as member:
        held: list[Member] = [(member.member_id, member.generation)]
        marker = _marker(kafka_cluster, group, lambda: held[-1])

        def lapse_later() -> None:  # the lease runs out, then the member leaves: the group is Empty
            time.sleep(0.5)
            held.append(("", -1))
            member.transport.leave(member.coordinator, group, member.member_id, 10)

        lapsing = threading.Thread(target=lapse_later)
        lapsing.start()
        try:
            with pytest.raises(WriteFenced):
                marker.write(9, "late")  # CompletingRebalance (no sync) until the lapse
            assert marker.read() is None
        finally:
            lapsing.join()
            marker.close()


def _plan(topic: str, targets: dict[int, list[int]]) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in sorted(targets.items())],
    }


def test_a_daemon_on_an_empty_store_holds_and_cleanup_leaves_no_move_and_no_throttle(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    probe = probe_of(kafka_cluster)
    topic = "crosscheck"
    before = {0: [1, 2], 1: [2, 3]}
    targets = {0: [4, 2], 1: [1, 3]}
    create_topic(probe, topic, before)
    for partition in before:
        fill(kafka_cluster.bootstrap_servers, topic, [partition], 24 * 1024 * 1024)
    throttles_before = probe.throttle_configs([topic])

    first = DaemonProcess(tmp_path / "first", kafka_cluster.bootstrap_servers, RATES).start()
    try:
        plan_id = first.submit(_plan(topic, targets))
        wait_for(lambda: len(probe.reassignments()) == 2, 30, "both copies under way")
        assert probe.throttle_configs([topic]) != throttles_before
    finally:
        first.kill9()

    group = f"reassignd.{kafka_cluster.cluster_id}"
    reader = _marker(kafka_cluster, group)
    try:
        seq, text = reader.read()  # type: ignore[misc]
        written = Marker.decode(text)
        assert written.plan == plan_id and written.state == "running" and seq == written.seq > 0
        assert {name for kind, name, _ in written.written if kind == "topic"} == {topic}
    finally:
        reader.close()

    # a new (empty) state dir: the store lost everything; the killed member's session ends first (10 s)
    second = DaemonProcess(tmp_path / "second", kafka_cluster.bootstrap_servers, RATES).start()
    try:
        wait_for(lambda: bool(second.request("GET", "/v1/status")[1]["store"]["findings"]), 45, "findings")
        status = second.request("GET", "/v1/status")[1]
        (found,) = status["store"]["findings"]
        assert "an empty store" in found and plan_id in found and "--mode cleanup" in found
        held = probe.throttle_configs([topic])
        time.sleep(2)  # held: the throttles stay as the lost plan left them, no move is touched
        assert probe.throttle_configs([topic]) == held and len(probe.reassignments()) == 2
        errors = [r for r in second.log_records("error") if "does not explain the cluster" in r["event"]]
        assert len(errors) == 1, second.log_tail()

        refused = second.cli("recover", "--mode", "clean", check=False)
        assert refused.returncode != 0 and "--mode" in refused.stderr + refused.stdout
        done = second.cli("recover", "--mode", "cleanup", "--json")
        answer = json.loads(done.stdout)
        assert sorted(answer["cancelled"]) == [f"{topic}-0", f"{topic}-1"], answer
        wait_for(lambda: probe.reassignments() == {}, 30, "no reassignment left")
        assert probe.throttle_configs([topic]) == throttles_before
        assert second.request("GET", "/v1/status")[1]["store"]["findings"] == []
        time.sleep(1)  # the daemon goes on idle: nothing of the lost plan comes back
        assert probe.reassignments() == {} and probe.throttle_configs([topic]) == throttles_before
        # Kafka's cancel keeps the current order without the adding replicas: the sets are the pre-plan
        # ones, the order (the preferred leader) is not put back (the marker does not carry the lists)
        assert {p: sorted(r) for p, r in probe.replicas(topic).items()} == {0: [1, 2], 1: [2, 3]}
    finally:
        second.stop()
