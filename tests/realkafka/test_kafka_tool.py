"""Kafka's own reassignment tool (`kafka-reassign-partitions.sh`, kafka-tools 4.4) as reassignd's neighbour on
one real KRaft cluster: each reads and undoes what the other did.

- `reassignd verify` judges a plan the stock tool executed, as the stock tool's `--verify` does;
- `reassignd reassignments --format kafka|kafka-json` is what the stock tool prints and takes, and the stock
  tool's rollback file comes back into `reassignd submit`;
- `reassignd submit --rollback-out` writes a rollback plan that restores every list exactly;
- `reassignd cancel --foreign` cancels the stock tool's move and leaves throttles alone.

Every test ends with nothing moving and no throttle left (the stock tool's `--execute` refuses to start while
any reassignment runs, and the module's tests share one cluster).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reassignd.localkafka.cluster import KafkaCluster
from reassignd.localkafka.load import RateProducer, fill
from reassignd.localkafka.probe import ClusterProbe
from reassignd.localkafka.tools import ReassignTool, ToolRun
from tests.realkafka.conftest import create_topic, stray_replicas, wait_for
from tests.realkafka.test_drain import (
    MIN_INSYNC_ERRORS,
    OPERATOR_BROKER,
    OPERATOR_TOPIC_LIST,
    foreign_throttle_changes,
)
from tests.services.daemon import DaemonProcess

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

# A rate under which a copy does not end before the test lifts it or cancels it, and one that ends it. KIP-73
# holds back whole fetches: a follower takes ~1 MiB at once (a segment, replica.fetch.max.bytes), then waits
# until that leaves the quota's 11 s window. Measured on 4.4, a 2 MiB copy took ~20 s at 100 KB/s and ~27 s
# at 10 KB/s: about 1 MiB per 11 s whatever the bound, which a JVM start and three CLI calls outlasted on a
# loaded box (a make test at load 65). So the partitions are 8 MiB: over a minute at this rate.
PARTITION_BYTES = 8 * 1024 * 1024
CRAWL = 10_000
LIFTED = 100_000_000
LIMITS = {
    "reassignment.max.incoming.replica.movements.per.broker": 2,
    "reassignment.max.outgoing.replica.movements.per.broker": 2,
    "leader.reassignment.throttled.rate": 20_000_000,
    "follower.reassignment.throttled.rate": 20_000_000,
}
# Four partitions, one led by each broker.
ASSIGNMENT = {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 1], 3: [4, 1, 2]}


def document(topic: str, targets: dict[int, list[int]]) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in sorted(targets.items())],
    }


def targets_of(doc: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): list(e["replicas"]) for e in doc["partitions"]}


def reassignd(*args: str) -> subprocess.CompletedProcess[str]:
    """One `reassignd` command, as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "reassignd", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def client_args(daemon: DaemonProcess) -> list[str]:
    return ["--api", daemon.url, "--token-file", str(daemon.token_file)]


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


def loaded_topic(cluster: KafkaCluster, probe: ClusterProbe, topic: str) -> None:
    create_topic(probe, topic, ASSIGNMENT, {"min.insync.replicas": "2"})
    fill(cluster.bootstrap_servers, topic, ASSIGNMENT, PARTITION_BYTES)


def set_operator_throttles(probe: ClusterProbe, topic: str) -> dict[str, str]:
    broker, key, value = OPERATOR_BROKER
    probe.set_broker_config(broker, key, value)
    probe.set_topic_config(topic, *OPERATOR_TOPIC_LIST)
    return probe.throttle_configs([topic])


def clear_throttles(probe: ClusterProbe, topics: list[str]) -> None:
    """Back to a cluster without throttles, for the module's next test."""
    for name in probe.throttle_configs(topics):
        owner, key = name.split(": ")
        kind, _, which = owner.partition(" ")
        if kind == "broker":
            probe.set_broker_config(int(which), key, None)
        elif kind == "topic":
            probe.set_topic_config(which, key, None)


def nothing_moving(probe: ClusterProbe) -> bool:
    return probe.reassignments() == {}


def leave_clean(probe: ClusterProbe, tool: ReassignTool, doc: dict[str, Any], topics: list[str]) -> None:
    """Whatever a test left: its moves cancelled, every throttle gone (the next test starts clean)."""
    if not nothing_moving(probe):
        tool.cancel(doc, check=False)
    wait_for(lambda: nothing_moving(probe), 60, "nothing moving")
    clear_throttles(probe, topics)


def stock_states(run: ToolRun) -> dict[int, str]:
    """The stock tool's `--verify` per partition: completed, in progress, or elsewhere (its "no active
    reassignment of partition t-p, but replica set is X rather than Y")."""
    states = {}
    for line in run.lines():
        for phrase, state in (
            ("is completed.", "completed"),
            ("is still in progress.", "in progress"),
            ("but replica set is", "elsewhere"),
        ):
            if phrase in line:
                name = line.split("partition ")[1].split(" ")[0].rstrip(",")
                states[int(name.rsplit("-", 1)[1])] = state
    return states


def reassignd_states(answer: dict[str, Any]) -> dict[int, str]:
    return {e["partition"]: e["state"] for e in answer["partitions"]}


# The stock tool's word for each of reassignd's verdicts (it has no "diverged": both are "elsewhere" to it).
AGREES = {
    "applied": "completed",
    "in_progress": "in progress",
    "not_applied": "elsewhere",
    "diverged": "elsewhere",
}


def test_verify_judges_a_plan_the_stock_tool_executed_as_the_stock_tool_does(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    probe = probe_of(kafka_cluster)
    topic = "tool-verify"
    loaded_topic(kafka_cluster, probe, topic)
    bootstrap = ["--bootstrap-servers", kafka_cluster.bootstrap_servers]
    # The operator's plan: 0 and 1 move, 2 should move (the tool is never asked), 3 only changes its leader
    # (the tool sends it elsewhere instead: to a broker of neither list).
    plan = document(topic, {0: [2, 3, 4], 1: [3, 4, 1], 2: [1, 3, 4], 3: [1, 2, 4]})
    executed = document(topic, {0: [2, 3, 4], 1: [3, 4, 1], 3: [4, 1, 3]})
    plan_file = write(tmp_path / "plan.json", plan)
    executed_file = write(tmp_path / "executed.json", executed)
    tool = ReassignTool(kafka_cluster.bootstrap_servers, tmp_path / "tool")
    dirs_before = replica_dirs(probe, topic)
    daemon = None
    try:
        started = tool.execute(executed, throttle=CRAWL)
        rollback = started.rollback
        assert rollback is not None and targets_of(rollback) == {
            (topic, p): ASSIGNMENT[p] for p in (0, 1, 3)
        }, started.stdout
        # Since Kafka 4.2 (KAFKA-19582) the stock tool's rollback names each replica's log dir, not "any".
        assert {
            (e["partition"], b): d
            for e in rollback["partitions"]
            for b, d in zip(e["replicas"], e["log_dirs"], strict=True)
        } == {(p, b): d for (p, b), d in dirs_before.items() if p in (0, 1, 3)}
        rollback_file = write(tmp_path / "stock-rollback.json", rollback)

        # In flight: reassignd and the stock tool agree partition by partition.
        during = reassignd("verify", str(plan_file), *bootstrap, "--rollback", str(rollback_file), "--json")
        stock_during = stock_states(tool.verify(plan, preserve_throttles=True))
        assert during.returncode == 1, during
        answer = json.loads(during.stdout)
        assert reassignd_states(answer) == {
            0: "in_progress",
            1: "in_progress",
            2: "not_applied",
            3: "diverged",
        }
        assert answer["applied"] is False and answer["unreadable"] == []
        assert stock_during == {0: "in progress", 1: "in progress", 2: "elsewhere", 3: "in progress"}
        mine = reassignd("verify", str(executed_file), *bootstrap)
        assert mine.returncode == 1, mine
        assert mine.stdout.splitlines()[-1] == "plan not applied: 3 in progress", mine.stdout

        tool.execute(executed, throttle=LIFTED, additional=True)  # the stock tool's way to change its rate
        wait_for(lambda: nothing_moving(probe), 60, "the stock tool's moves ended")

        after = reassignd("verify", str(plan_file), *bootstrap, "--rollback", str(rollback_file), "--json")
        stock_after = stock_states(tool.verify(plan, preserve_throttles=True))
        assert after.returncode == 1, after
        verdicts = json.loads(after.stdout)["partitions"]
        assert reassignd_states(json.loads(after.stdout)) == {
            0: "applied",
            1: "applied",
            2: "not_applied",
            3: "diverged",
        }
        assert {e["partition"]: AGREES[e["state"]] for e in verdicts} == stock_after
        assert verdicts[2]["pre_plan"] is None  # the stock tool's rollback names only what it moved
        assert verdicts[3]["replicas"] == [4, 1, 3] and verdicts[3]["pre_plan"] == ASSIGNMENT[3]

        done = reassignd("verify", str(executed_file), *bootstrap)
        assert done.returncode == 0, done
        assert done.stdout == "plan applied: all 3 partition(s) on their target\n"
        # The stock tool agrees, and then clears the throttles it set (its --verify does once nothing moves).
        assert stock_states(tool.verify(executed)) == dict.fromkeys((0, 1, 3), "completed")
        assert probe.throttle_configs([topic]) == {}

        # The stock tool's rollback file, run by reassignd: every list and every log dir as before.
        daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers, LIMITS).start()
        again = str(tmp_path / "again.json")
        submitted = reassignd("submit", str(rollback_file), *client_args(daemon), "--rollback-out", again)
        assert submitted.returncode == 0, submitted
        status = daemon.wait_for_state(plan_id_of(submitted), {"completed", "cancelled", "failed"}, 60)
        assert status["state"] == "completed", status
        assert probe.replicas(topic) == ASSIGNMENT
        assert replica_dirs(probe, topic) == dirs_before
        assert reassignd("verify", str(rollback_file), *bootstrap).returncode == 0
    finally:
        if daemon is not None:
            daemon.stop()
        leave_clean(probe, tool, executed, [topic])
    assert daemon.log_records("error") == []


def test_the_kafka_formats_of_reassignments_round_trip_through_the_stock_tool(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """reassignd's listing is the stock tool's `--list`, byte for byte; its kafka-json is what the stock tool
    verifies and cancels; the rollback file the stock tool printed comes back into `reassignd submit` and
    restores the order Kafka's cancel did not."""
    probe = probe_of(kafka_cluster)
    topic = "tool-formats"
    loaded_topic(kafka_cluster, probe, topic)
    executed = document(topic, {0: [2, 3, 4], 1: [3, 4, 1], 2: [4, 1, 2]})
    tool = ReassignTool(kafka_cluster.bootstrap_servers, tmp_path / "tool")
    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers).start()
    api = client_args(daemon)
    try:
        rollback = tool.execute(executed, throttle=CRAWL).rollback
        assert rollback is not None
        rollback_file = write(tmp_path / "stock-rollback.json", rollback)

        listed = reassignd("reassignments", *api, "--format", "kafka")
        assert listed.returncode == 0, listed
        assert listed.stdout == tool.list().stdout  # "Current partition reassignments:\ntool-formats-0: ..."
        assert "tool-formats-0: replicas: 2,3,4,1. adding: 4. removing: 1." in listed.stdout.splitlines()

        as_json = reassignd("reassignments", *api, "--format", "kafka-json")
        assert as_json.returncode == 0, as_json
        in_flight = json.loads(as_json.stdout)
        assert targets_of(in_flight) == targets_of(executed)  # the stock tool's targets, order included
        owners = json.loads(reassignd("reassignments", *api, "--json").stdout)["reassignments"]
        assert {(r["partition"], r["owner"]) for r in owners} == {(p, "foreign") for p in (0, 1, 2)}

        # Fed to the stock tool: it verifies them as its own, and cancels them.
        stock_file = write(tmp_path / "listed.json", in_flight)
        assert stock_states(tool.verify(json.loads(stock_file.read_text()), preserve_throttles=True)) == {
            0: "in progress",
            1: "in progress",
            2: "in progress",
        }
        cancelled = tool.cancel(in_flight)
        names = ",".join(f"{topic}-{p}" for p in (0, 1, 2))
        assert f"Successfully cancelled partition reassignments for: {names}" in cancelled.stdout
        assert nothing_moving(probe)
        assert (
            reassignd("reassignments", *api, "--format", "kafka").stdout
            == tool.list().stdout
            == ("No partition reassignments found.\n")
        )
        # KRaft's cancel keeps the replicas but the added ones, in the move's order (target first): the set is
        # the old one, the preferred leader is not (PartitionReassignmentRevert).
        reverted = probe.replicas(topic)
        assert {p: reverted[p] for p in (0, 1, 2)} == {0: [2, 3, 1], 1: [3, 4, 2], 2: [4, 1, 3]}

        # Back: the stock tool's rollback file, submitted to reassignd, restores each list in its order.
        again = str(tmp_path / "again.json")
        submitted = reassignd("submit", str(rollback_file), *api, "--rollback-out", again)
        assert submitted.returncode == 0, submitted
        status = daemon.wait_for_state(plan_id_of(submitted), {"completed", "cancelled", "failed"}, 60)
        assert status["state"] == "completed", status
        replicas = probe.replicas(topic)
        assert replicas == ASSIGNMENT, replicas
        assert probe.leaders(topic) == {p: r[0] for p, r in ASSIGNMENT.items()}
        verified = reassignd("verify", str(rollback_file), "--bootstrap-servers", probe.bootstrap)
        assert verified.returncode == 0, verified
    finally:
        daemon.stop()
        leave_clean(probe, tool, executed, [topic])
    assert daemon.log_records("error") == []


def test_a_rollback_file_from_submit_restores_every_pre_plan_list_in_order(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    probe = probe_of(kafka_cluster)
    topic = "tool-rollback"
    loaded_topic(kafka_cluster, probe, topic)
    throttles_before = set_operator_throttles(probe, topic)
    # A new leader, a pure leadership change, a move of a follower with a new order; partition 3 stays.
    plan = document(topic, {0: [4, 2, 3], 1: [3, 2, 4], 2: [3, 1, 2]})
    pre_plan = document(topic, {p: ASSIGNMENT[p] for p in (0, 1, 2)})
    plan_file = write(tmp_path / "plan.json", plan)
    rollback_file = tmp_path / "rollback.json"
    tool = ReassignTool(kafka_cluster.bootstrap_servers, tmp_path / "tool")
    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers, LIMITS).start()
    api = client_args(daemon)
    bootstrap = ["--bootstrap-servers", kafka_cluster.bootstrap_servers]
    try:
        with RateProducer(kafka_cluster.bootstrap_servers, topic, list(ASSIGNMENT), 256 * 1024) as producer:
            submitted = reassignd("submit", str(plan_file), *api, "--rollback-out", str(rollback_file))
            assert submitted.returncode == 0, submitted
            # Kafka's compact JSON with every log dir "any", as the stock tool printed it before 4.2
            assert json.loads(rollback_file.read_text()) == {
                "version": 1,
                "partitions": [{**e, "log_dirs": ["any"] * 3} for e in pre_plan["partitions"]],
            }
            status = daemon.wait_for_state(plan_id_of(submitted), {"completed", "cancelled", "failed"}, 90)
            assert status["state"] == "completed", status
            assert probe.replicas(topic) == {**ASSIGNMENT, **{p: r for (_, p), r in targets_of(plan).items()}}
            assert reassignd("verify", str(plan_file), *bootstrap).returncode == 0
            assert set(stock_states(tool.verify(plan, preserve_throttles=True)).values()) == {"completed"}

            again = tmp_path / "again.json"
            back = reassignd("submit", str(rollback_file), *api, "--rollback-out", str(again))
            assert back.returncode == 0, back
            assert targets_of(json.loads(again.read_text())) == targets_of(plan)
            status = daemon.wait_for_state(plan_id_of(back), {"completed", "cancelled", "failed"}, 90)
            assert status["state"] == "completed", status
            time.sleep(1)  # the producer keeps writing past the end of the rollback
        assert probe.replicas(topic) == ASSIGNMENT  # every list as before, order included
        assert probe.leaders(topic) == {p: r[0] for p, r in ASSIGNMENT.items()}
        assert reassignd("verify", str(rollback_file), *bootstrap).returncode == 0
        assert set(stock_states(tool.verify(pre_plan, preserve_throttles=True)).values()) == {"completed"}
        assert not MIN_INSYNC_ERRORS & set(producer.report.errors), producer.report.errors
        assert producer.report.acked_records > 0
        assert probe.throttle_configs([topic]) == throttles_before
    finally:
        daemon.stop()
        leave_clean(probe, tool, plan, [topic])
    assert daemon.log_records("error") == []
    assert foreign_throttle_changes(daemon) == [], "nobody else touched a throttle"


def plan_id_of(submitted: subprocess.CompletedProcess[str]) -> str:
    """The id `reassignd submit` printed first: "plan P queued: ..." or "plan P running: ..."."""
    return submitted.stdout.split()[1]


def test_cancel_foreign_stops_the_stock_tools_move_and_leaves_every_throttle_as_it_is(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """reassignd cancels the stock tool's reassignment when asked, and touches no throttle it did not set:
    the stock tool's own (which replaced the operator's) stay until the stock tool's --verify clears them,
    and that --verify clears the operator's too."""
    probe = probe_of(kafka_cluster)
    topic = "tool-foreign"
    loaded_topic(kafka_cluster, probe, topic)
    set_operator_throttles(probe, topic)
    executed = document(topic, {0: [2, 3, 4], 1: [3, 4, 1], 2: [4, 1, 2]})
    tool = ReassignTool(kafka_cluster.bootstrap_servers, tmp_path / "tool")
    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers).start()
    try:
        tool.execute(executed, throttle=CRAWL)
        # The stock tool SETs its rate on every broker of the moves and its own replica lists on the topic:
        # the operator's rate on broker 2 and list on the topic are gone from here on.
        stock_throttles = probe.throttle_configs([topic])
        assert stock_throttles["broker 2: follower.replication.throttled.rate"] == str(CRAWL)
        assert stock_throttles[f"topic {topic}: leader.replication.throttled.replicas"] != "0:1"
        listed = probe.reassignments()
        assert set(listed) == {(topic, p) for p in (0, 1, 2)}, listed

        cancelled = reassignd("cancel", *client_args(daemon), "--foreign", "--topics", "tool-f.*")
        assert cancelled.returncode == 0, cancelled
        assert cancelled.stdout.splitlines() == [
            *(
                f"cancelled {topic}-{p}: was adding {m.adding[0]}, removing {m.removing[0]}"
                for (_, p), m in sorted(listed.items())
            ),
            # the stock tool's throttles outlive its moves: the operator is told so, and how they go
            "throttles: none changed. The tool that started these moves may have set some:",
            "its --verify (or --cancel) of the same plan file removes them, and with them",
            "every other replication throttle of the cluster's brokers and of those topics.",
        ]
        wait_for(lambda: nothing_moving(probe), 30, "the stock tool's moves cancelled")
        replicas = probe.replicas(topic)
        for (_, partition), moving in listed.items():  # KRaft: the move's list without the added replica
            assert replicas[partition] == [b for b in moving.replicas if b not in moving.adding]
            assert sorted(replicas[partition]) == sorted(ASSIGNMENT[partition])
        wait_for(lambda: stray_replicas(probe, topic, replicas) == set(), 30, "the added replicas deleted")
        assert probe.throttle_configs([topic]) == stock_throttles, "reassignd left every throttle alone"
        warnings = daemon.log_records("warning")
        events = [r for r in warnings if r.get("event") == "foreign reassignments cancelled"]
        assert len(events) == 1 and events[0]["cancelled"] == 3, events

        # The stock tool's --verify, once nothing moves, deletes every broker's rates and the topic's lists:
        # the operator's own throttles (already replaced) do not come back.
        verified = tool.verify(executed)
        assert stock_states(verified) == dict.fromkeys((0, 1, 2), "elsewhere"), verified.stdout
        assert "Clearing broker-level throttles on brokers 1,2,3,4" in verified.stdout
        assert probe.throttle_configs([topic]) == {}
    finally:
        daemon.stop()
        leave_clean(probe, tool, executed, [topic])
    assert daemon.log_records("error") == []


def replica_dirs(probe: ClusterProbe, topic: str) -> dict[tuple[int, int], str]:
    """(partition, broker) -> the log dir of each current log of `topic`."""
    logs = probe.log_dirs(probe.brokers())
    return {(p, b): d for (t, p, b), (d, _, future) in logs.items() if t == topic and not future}


def test_the_stock_tools_cancel_wipes_every_throttle_mid_plan_and_reassignd_puts_its_own_back(
    kafka_cluster: KafkaCluster, probe_of: Any, tmp_path: Path
) -> None:
    """The stock tool's --cancel clears the rates of every broker whatever it cancelled (here nothing: its
    plan is another topic's), in the middle of reassignd's plan: reassignd says so, writes its own rates
    again, finishes, and leaves what the stock tool left (the operator's rate it deleted stays deleted, the
    operator's list on the plan's topic, which it did not touch, is restored)."""
    probe = probe_of(kafka_cluster)
    topic = "tool-wipe"
    loaded_topic(kafka_cluster, probe, topic)
    set_operator_throttles(probe, topic)
    plan = document(topic, {0: [4, 2, 3], 1: [3, 4, 1]})  # copies to brokers 4 and 1
    create_topic(probe, "tool-wipe-other", {0: [1, 2, 3]})
    other = document("tool-wipe-other", {0: [2, 3, 4]})  # the stock tool's own plan file, of another topic
    slow = {
        **LIMITS,
        "leader.reassignment.throttled.rate": CRAWL,
        "follower.reassignment.throttled.rate": CRAWL,
    }
    tool = ReassignTool(kafka_cluster.bootstrap_servers, tmp_path / "tool")
    daemon = DaemonProcess(tmp_path / "daemon", kafka_cluster.bootstrap_servers, slow).start()
    try:
        plan_id = daemon.submit(plan)
        wait_for(lambda: our_rates(probe) != {}, 30, "reassignd's rates on the brokers")
        wiped = tool.cancel(other)
        assert "Clearing broker-level throttles on brokers 1,2,3,4" in wiped.stdout, wiped.stdout
        assert daemon.status(plan_id)["state"] == "running", "the wipe came in the middle of the plan"
        wait_for(lambda: foreign_throttle_changes(daemon) != [], 30, "reassignd saw the wipe")
        wait_for(lambda: receivers_throttled(probe), 30, "reassignd's rates written again")

        faster = reassignd(
            "throttle", *client_args(daemon), "--leader-rate", "50MB/s", "--follower-rate", "50MB/s"
        )
        assert faster.returncode == 0, faster
        status = daemon.wait_for_state(plan_id, {"completed", "cancelled", "failed"}, 90)
        assert status["state"] == "completed", status
        assert probe.replicas(topic) == {**ASSIGNMENT, **{p: r for (_, p), r in targets_of(plan).items()}}
        assert probe.throttle_configs([topic]) == {f"topic {topic}: {OPERATOR_TOPIC_LIST[0]}": "0:1"}
    finally:
        daemon.stop()
        leave_clean(probe, tool, plan, [topic])
    assert daemon.log_records("error") == []
    changes = foreign_throttle_changes(daemon)
    assert {r["found"] for r in changes} == {None}, changes  # deleted, every one


def receivers_throttled(probe: ClusterProbe) -> bool:
    """Some replica is being added, and every broker receiving one has reassignd's follower rate."""
    moving = probe.reassignments()
    rates = probe.throttle_configs([])
    receivers = {b for m in moving.values() for b in m.adding}
    key = "follower.replication.throttled.rate"
    return bool(receivers) and all(rates.get(f"broker {b}: {key}") == str(CRAWL) for b in receivers)


def our_rates(probe: ClusterProbe) -> dict[str, str]:
    """The brokers' replication rates (reassignd's while its moves run)."""
    return {k: v for k, v in probe.throttle_configs([]).items() if k.startswith("broker ")}
