"""The client commands as an operator runs them: `python -m reassignd ...` subprocesses against a real
aiohttp server (the daemon's API over the in-memory service) on a free loopback port."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reassignd.daemon.api import create_app, load_openapi, prometheus_metrics_handler, start_api
from reassignd.model import TopicPartition
from tests.daemon.fake_service import FakeControllerService, drain_plan, small_cluster
from tests.services.procs import free_port

pytestmark = pytest.mark.slow

TOKEN = "cli-test-token-0123456789"
LEADER = "leader.reassignment.throttled.rate"
FOLLOWER = "follower.reassignment.throttled.rate"
LOG_DIR = "log.dir.reassignment.throttled.rate"

# What `cancel --foreign` says after cancelling: another tool's throttles outlive its moves (Kafka's
# kafka-reassign-partitions --execute --throttle sets them; only its --verify or --cancel removes them).
FOREIGN_THROTTLES_NOTE = [
    "throttles: none changed. The tool that started these moves may have set some:",
    "its --verify (or --cancel) of the same plan file removes them, and with them",
    "every other replication throttle of the cluster's brokers and of those topics.",
]


@dataclass
class Daemon:
    fake: FakeControllerService
    url: str
    token_file: Path


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    fake = small_cluster()
    app = create_app(fake, token=TOKEN, metrics_handler=prometheus_metrics_handler(), openapi=load_openapi())
    port = free_port()
    runner = await start_api(app, "127.0.0.1", port)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    try:
        yield Daemon(fake, f"http://127.0.0.1:{port}", token_file)
    finally:
        await runner.cleanup()


async def cli(
    daemon: Daemon | None,
    *args: str,
    token: bool = True,
    env: dict[str, str] | None = None,
    wait: float = 30,
) -> Result:
    """Run the CLI while the server keeps serving on this event loop."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("REASSIGND")}
    if daemon is not None:
        environ["REASSIGNDCTL_API"] = daemon.url
        if token:
            environ["REASSIGNDCTL_TOKEN_FILE"] = str(daemon.token_file)
    environ.update(env or {})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "reassignd",
        *args,
        env=environ,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=daemon.token_file.parent if daemon is not None else None,  # where default files land
    )
    out, err = await asyncio.wait_for(proc.communicate(), wait)
    result = Result(proc.returncode if proc.returncode is not None else -1, out.decode(), err.decode())
    assert "Traceback" not in result.err, result.err
    return result


def write_plan(tmp_path: Path, plan: dict[str, Any], name: str = "plan.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(plan))
    return str(path)


async def test_submit_then_follow_the_plan(daemon: Daemon, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, drain_plan())
    result = await cli(daemon, "submit", plan)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "plan plan-1 running: 6 partition(s), 6 replica(s) to move, 6.0 GB, 6 step(s)",
        "rollback: saved the current assignment to plan-1.rollback.json "
        "(`reassignd submit plan-1.rollback.json` restores it)",
    ]
    rollback = (tmp_path / "plan-1.rollback.json").read_text()
    assert rollback.startswith(
        '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2,3],'
    )
    assert json.loads(rollback)["partitions"] == [
        {"topic": "orders", "partition": p, "replicas": [1 + (p + i) % 3 for i in range(3)]}
        | {"log_dirs": ["any"] * 3}
        for p in range(6)
    ]
    daemon.fake.tick(10)
    result = await cli(daemon, "plans")
    header, row = result.out.splitlines()
    assert header.split() == ["PLAN", "STATE", "END", "(UTC)", "TOOK", "MOVED", "DONE"]
    cells = row.split()  # TOOK runs on the wall clock (the fake's is in 2023): not compared
    assert cells[:4] == ["plan-1", "running", "in", "51s"] and cells[5:] == ["980.0", "MB", "16.3%"]
    result = await cli(daemon, "status")
    lines = result.out.splitlines()
    assert result.code == 0 and lines[0] == "cluster reachable"
    assert lines[1].startswith("plan plan-1  running  started 2023-11-14 22:13:20Z, ")
    assert lines[2] == "bytes      980.0 MB of 6.0 GB (16.3%)"
    assert any(line.split()[:3] == ["4", "2/2", "0/2"] for line in lines)
    assert max(len(line) for line in lines) <= 80
    result = await cli(daemon, "status", "plan-1", "--json")
    assert result.json() == daemon.fake.plan_status("plan-1")


async def test_dry_run_queues_nothing(daemon: Daemon, tmp_path: Path) -> None:
    result = await cli(daemon, "submit", write_plan(tmp_path, drain_plan(count=2)), "--dry-run", "--json")
    assert result.code == 0 and result.json()["state"] == "dry_run" and daemon.fake.plans == {}
    assert [e["replicas"] for e in result.json()["rollback"]["partitions"]] == [[1, 2, 3], [2, 3, 1]]
    saved = [name for name in os.listdir(tmp_path) if name.endswith(".rollback.json")]
    assert not saved, "a dry run saves no rollback unless asked"


async def test_a_dry_run_shows_what_would_change(daemon: Daemon, tmp_path: Path) -> None:
    """The issue: a dry run printed counts only. It prints each partition's current -> target replicas and
    what each broker gains and loses, within 80 columns."""
    result = await cli(daemon, "submit", write_plan(tmp_path, drain_plan(count=2)), "--dry-run")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("dry run: 2 partition(s), 2 replica(s) to move")
    assert "  orders-0  [1, 2, 3] -> [4, 2, 3]" in lines and "  orders-1  [2, 3, 1] -> [2, 3, 4]" in lines
    table = lines[lines.index("per broker: replicas gained and lost") + 1 :]
    assert [row.split() for row in table] == [
        ["BROKER", "GAINS", "LOSES", "NET"],
        ["1", "0", "2", "-2"],
        ["4", "2", "0", "+2"],
    ]
    assert all(len(line) <= 80 for line in lines)
    assert daemon.fake.plans == {}


async def test_rollback_out_is_written_and_never_overwritten(daemon: Daemon, tmp_path: Path) -> None:
    out = tmp_path / "undo.json"
    plan = write_plan(tmp_path, drain_plan(count=2))
    result = await cli(daemon, "submit", plan, "--rollback-out", str(out), "--json")
    assert result.code == 0 and json.loads(out.read_text()) == result.json()["rollback"]
    result = await cli(
        daemon, "submit", write_plan(tmp_path, drain_plan(topic="logs", count=1)), "--rollback-out", str(out)
    )
    assert result.code == 2 and "never overwritten" in result.err
    assert list(daemon.fake.plans) == ["plan-1"], "refused before anything was submitted"


async def test_a_refused_plan_prints_every_problem_and_exits_2(daemon: Daemon, tmp_path: Path) -> None:
    plan = {
        "version": 1,
        "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [4, 5, 9]},
            {"topic": "orders", "partition": 1, "replicas": [4, 5]},
        ],
    }
    result = await cli(daemon, "submit", write_plan(tmp_path, plan))
    assert result.code == 2 and result.out == ""
    assert result.err.splitlines() == [
        "reassignd: invalid_plan: plan rejected with 2 problem(s)",
        "  - orders-0: replicas: unknown broker id(s) [9]",
        "  - orders-1: replicas: changes the replication factor from 3 to 2; "
        "pass --allow-rf-change to mean it",
    ]
    shrink = write_plan(tmp_path, {**plan, "partitions": plan["partitions"][1:]}, "shrink.json")
    result = await cli(daemon, "submit", shrink, "--allow-rf-change")
    assert result.code == 0 and daemon.fake.plans["plan-1"].moves[TopicPartition("orders", 1)].target == (
        4,
        5,
    )


async def test_a_malformed_plan_file_is_refused_locally(daemon: Daemon, tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"version": 1, "partitions": [')
    result = await cli(daemon, "submit", str(path))
    assert result.code == 2 and "reassignment plan" in result.err
    result = await cli(daemon, "submit", str(tmp_path / "missing.json"))
    assert result.code == 2 and "No such file" in result.err
    assert daemon.fake.calls == []


async def test_tokens_from_file_environment_or_nowhere(daemon: Daemon, tmp_path: Path) -> None:
    plan = write_plan(tmp_path, drain_plan(count=1))
    result = await cli(daemon, "submit", plan, token=False)
    assert result.code == 2
    assert result.err.startswith("reassignd: unauthorized: missing bearer token")
    assert "hint: pass --token-file" in result.err
    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-token")
    result = await cli(daemon, "submit", plan, "--token-file", str(wrong))
    assert result.code == 2 and "wrong bearer token" in result.err
    assert [c for c in daemon.fake.calls if c[0] == "submit_plan"] == []
    result = await cli(daemon, "submit", plan, token=False, env={"REASSIGNDCTL_TOKEN": TOKEN})
    assert result.code == 0, result.err
    assert "deprecated" not in result.err
    result = await cli(daemon, "cancel", "--token-file", str(daemon.token_file), token=False)
    assert result.code == 0 and result.out == "plan plan-1 cancelled\n"
    empty = tmp_path / "empty"
    empty.write_text("\n")
    result = await cli(daemon, "pause", "--token-file", str(empty), token=False)
    assert result.code == 2 and "is empty" in result.err


async def test_the_client_variables_are_its_own_and_the_old_names_still_work(
    daemon: Daemon, tmp_path: Path
) -> None:
    """REASSIGND_* configures the daemon (a daemon started from the same shell read the client's
    REASSIGND_API as a config typo): the client reads REASSIGNDCTL_*, and the old names with a warning."""
    url = f"http://127.0.0.1:{free_port()}"
    result = await cli(None, "plans", env={"REASSIGNDCTL_API": url})
    assert result.code == 3 and url in result.err and "deprecated" not in result.err
    result = await cli(None, "plans", env={"REASSIGND_API": url})
    assert result.code == 3 and url in result.err
    assert "reassignd: warning: $REASSIGND_API is deprecated: set $REASSIGNDCTL_API" in result.err
    old = {"REASSIGND_API": daemon.url, "REASSIGND_API_TOKEN_FILE": str(daemon.token_file)}
    plan = write_plan(tmp_path, drain_plan(count=1))
    result = await cli(None, "submit", plan, "--rollback-out", str(tmp_path / "r.json"), env=old)
    assert result.code == 0, result.err
    assert "$REASSIGND_API_TOKEN_FILE is deprecated: set $REASSIGNDCTL_TOKEN_FILE" in result.err
    both = {**old, "REASSIGNDCTL_API": daemon.url, "REASSIGNDCTL_TOKEN_FILE": str(daemon.token_file)}
    result = await cli(None, "pause", env=both)
    assert result.code == 0 and "deprecated" not in result.err, result.err
    help_text = (await cli(None, "plans", "--help")).out
    assert "$REASSIGNDCTL_API" in help_text and "$REASSIGNDCTL_TOKEN_FILE" in help_text


async def test_pause_resume_cancel(daemon: Daemon, tmp_path: Path) -> None:
    result = await cli(daemon, "pause")
    assert (
        result.code == 2 and result.err.strip() == "reassignd: conflict: nothing to pause: no plan is running"
    )
    await cli(daemon, "submit", write_plan(tmp_path, drain_plan()))
    result = await cli(daemon, "pause", "plan-1")
    assert result.code == 0 and result.out.startswith("plan plan-1 paused: moves in flight finish, no new")
    result = await cli(daemon, "resume")  # the issue: it said "running: running again"
    assert result.code == 0 and result.out == (
        "plan plan-1 resumed: new moves start from the next cycle, under the limits in force; "
        "`reassignd status --watch` follows it\n"
    )
    result = await cli(daemon, "pause")
    result = await cli(daemon, "resume", "--json")
    assert result.code == 0 and result.json()["state"] == "running"
    result = await cli(daemon, "cancel", "plan-9")
    assert result.code == 2 and "not_found: no plan with id 'plan-9'" in result.err
    result = await cli(daemon, "cancel")
    assert result.code == 0 and daemon.fake.plans["plan-1"].state == "cancelled"


async def test_status_without_a_running_plan(daemon: Daemon) -> None:
    result = await cli(daemon, "status")
    assert (result.code, result.out) == (0, "cluster reachable\nno plan is running\n")
    result = await cli(daemon, "status", "--json")
    assert (result.code, result.json()) == (
        0,
        {
            "cluster": {"reachable": True, "since": None, "unreachable_brokers": [], "error": None},
            "store": {"available": True, "since": None, "error": None, "findings": []},
            "plan_id": None,
            "state": "idle",
            "last_cycle": "idle",
        },
    )


async def test_status_says_first_that_the_cluster_is_unreachable_idle_or_not(
    daemon: Daemon, tmp_path: Path
) -> None:
    """Issue 27: an idle daemon whose cluster does not answer said only `no plan is running`."""
    daemon.fake.cluster_error = "no broker answered within 10 s"
    result = await cli(daemon, "status")
    first, second = result.out.splitlines()
    assert result.code == 0 and second == "no plan is running"
    assert first.startswith("CLUSTER UNREACHABLE since ") and first.endswith(
        ": no broker answered within 10 s; nothing new starts"
    )
    assert (await cli(daemon, "status", "--json")).json()["cluster"]["reachable"] is False
    await cli(daemon, "submit", write_plan(tmp_path, drain_plan(count=2)))
    lines = (await cli(daemon, "status")).out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("plan plan-1  running"))
    assert " ".join(line.strip() for line in lines[:header]) == first, "wrapped at 80 columns, above the plan"
    result = await cli(daemon, "status", "plan-3")
    assert result.code == 2 and "not_found" in result.err


async def test_limits_show_and_change(daemon: Daemon) -> None:
    result = await cli(daemon, "limits")
    lines = result.out.splitlines()
    assert result.code == 0 and max(len(line) for line in lines) <= 80, lines
    assert "reassignment.parallel.partition.count = 4" in lines
    assert "reassignment.parallel.leader.movements = unlimited" in lines, "Kafka's largest int, in words"
    assert "leader.reassignment.throttled.rate = 50.0 MB/s" in lines
    assert "reassignment.elect.preferred.leader.after.finish = true" in lines
    ordering = next(i for i, line in enumerate(lines) if line.startswith("reassignment.ordering = ["))
    assert lines[ordering : ordering + 2] == [
        'reassignment.ordering = ["under_min_isr", "leader_moves", "round_robin",',
        '                         "larger_first"]',
    ], "a list as the config file writes it, wrapped at 80 columns"
    result = await cli(daemon, "limits", "--json")
    assert result.json()["reassignment.parallel.leader.movements"] == 2**31 - 1, "--json keeps raw numbers"
    result = await cli(
        daemon,
        "limits",
        "reassignment.parallel.partition.count=9",
        "reassignment.scheduling.mode=batch",
        "reassignment.max.concurrent.replica.movements=unlimited",
        "follower.reassignment.throttled.rate=20MB/s",
        "reassignment.ordering=larger_first,plan_order",
    )
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "reassignment.parallel.partition.count = 9   (was 4)",
        'reassignment.scheduling.mode = "batch"   (was "continuous")',
        "reassignment.max.concurrent.replica.movements = unlimited   (was 8)",
        "follower.reassignment.throttled.rate = 20.0 MB/s   (was 50.0 MB/s)",
        'reassignment.ordering = ["larger_first", "plan_order"]',
        '    (was ["under_min_isr", "leader_moves", "round_robin", "larger_first"])',
        "in force from the next cycle; moves above a lowered limit finish, none starts",
    ]
    assert max(len(line) for line in result.out.splitlines()) <= 80
    limits = daemon.fake.limits()
    assert limits["reassignment.scheduling.mode"] == "batch"
    assert limits["follower.reassignment.throttled.rate"] == 20_000_000
    assert limits["reassignment.ordering"] == ["larger_first", "plan_order"]
    result = await cli(daemon, "limits", "reassignment.parallel.partition.count=9")
    assert result.out.splitlines()[0] == "reassignment.parallel.partition.count = 9   (unchanged)"
    result = await cli(daemon, "limits", "reassignment.parallel.partition.count=0")
    assert result.code == 2 and "invalid_request: limits unchanged: 1 problem(s)" in result.err
    assert daemon.fake.limits()["reassignment.parallel.partition.count"] == 9
    result = await cli(daemon, "limits", "reassignment.max.incoming.replica.movement.per.broker=1")
    assert result.code == 2 and result.err.splitlines() == [
        "reassignd: limits unchanged: 1 unknown key(s)",
        "  - limits: reassignment.max.incoming.replica.movement.per.broker: unknown key; did you mean "
        "reassignment.max.incoming.replica.movements.per.broker?",
    ]
    result = await cli(daemon, "limits", "reassignment.nope=1", "--json")
    assert result.code == 2 and result.json()["error"]["problems"][0]["field"] == "reassignment.nope"
    result = await cli(daemon, "limits", "oops")
    assert result.code == 2 and "must be KEY=VALUE" in result.err


async def test_throttle_show_and_change_with_units(daemon: Daemon, tmp_path: Path) -> None:
    await cli(daemon, "submit", write_plan(tmp_path, drain_plan()))
    daemon.fake.tick(1)
    result = await cli(daemon, "throttle", "--follower-rate", "10MiB/s", "--leader-rate", "80MB/s")
    assert result.code == 0, result.err
    assert result.out.splitlines()[:2] == [
        f"{LEADER} = 80.0 MB/s   (was 50.0 MB/s)",
        f"{FOLLOWER} = 10.5 MB/s   (was 50.0 MB/s)",
    ]
    assert "in force on the brokers with moves" in result.out
    assert ["4", "-", "10.5", "MB/s"] in [line.split() for line in result.out.splitlines()]
    result = await cli(daemon, "throttle", "--leader-rate", "none", "--json")
    assert result.code == 0 and result.json()[LEADER] is None
    result = await cli(daemon, "throttle", "--follower-rate", "400mbps")  # megabits, said back in bytes
    assert result.code == 0, result.err
    assert f"{FOLLOWER} = 50.0 MB/s   (was 10.5 MB/s)" in result.out.splitlines()
    assert daemon.fake.throttles()[FOLLOWER] == 50_000_000
    result = await cli(daemon, "throttle", "--follower-rate", "50mbs")
    assert result.code == 2 and "unknown unit 'mbs'" in result.err and "50Mbps = 50 megabits/s" in result.err
    assert daemon.fake.throttles()[FOLLOWER] == 50_000_000


async def test_throttle_sets_the_log_dir_rate(daemon: Daemon) -> None:
    result = await cli(daemon, "throttle", "--log-dir-rate", "2MB/s")
    assert result.code == 0, result.err
    assert f"{LOG_DIR} = 2.0 MB/s   (was none (no throttle))" in result.out.splitlines()
    assert daemon.fake.throttles()[LOG_DIR] == 2_000_000
    result = await cli(daemon, "throttle", "--log-dir-rate", "none", "--json")
    assert result.code == 0 and result.json()[LOG_DIR] is None
    result = await cli(daemon, "limits", f"{LOG_DIR}=5MiB/s")  # the same key as a limit, units and all
    assert result.code == 0, result.err
    assert daemon.fake.throttles()[LOG_DIR] == 5 * 1024 * 1024


async def test_reassignments_ours_and_foreign(daemon: Daemon, tmp_path: Path) -> None:
    result = await cli(daemon, "reassignments")
    assert result.out.splitlines()[1].split() == ["logs", "1", "4,2,3", "4", "3", "foreign", "-"]
    await cli(daemon, "submit", write_plan(tmp_path, drain_plan(count=1)))
    daemon.fake.tick(1)
    result = await cli(daemon, "reassignments", "--json")
    owners = sorted((r["owner"], r["plan_id"]) for r in result.json()["reassignments"])
    assert owners == [("foreign", None), ("reassignd", "plan-1")]
    # Kafka's --list text, byte for byte (ReassignPartitionsCommand.curReassignmentsToString)
    result = await cli(daemon, "reassignments", "--format", "kafka")
    assert result.out == (
        "Current partition reassignments:\n"
        "logs-1: replicas: 4,2,3. adding: 4. removing: 3.\n"
        "orders-0: replicas: 4,2,3,1. adding: 4. removing: 1.\n"
    )
    result = await cli(daemon, "reassignments", "--format", "kafka-json")
    assert result.out == (
        '{"version":1,"partitions":[{"topic":"logs","partition":1,"replicas":[4,2],"log_dirs":["any","any"]},'
        '{"topic":"orders","partition":0,"replicas":[4,2,3],"log_dirs":["any","any","any"]}]}\n'
    )

    # cancel --foreign: only the foreign one; ours is left and named
    result = await cli(daemon, "cancel", "--topics", "logs")
    assert result.code == 2 and "--topics: only with --foreign" in result.err
    result = await cli(daemon, "cancel", "--foreign", "--topics", "orders|logs")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "cancelled logs-1: was adding 4, removing 3",
        "left orders-0: part of plan plan-1",
        *FOREIGN_THROTTLES_NOTE,  # said once anything was cancelled
    ]
    assert daemon.fake.partitions[TopicPartition("logs", 1)].replicas == (2, 3)
    result = await cli(daemon, "cancel", "--foreign")
    assert result.out == "left orders-0: part of plan plan-1\nno foreign reassignment to cancel\n"  # no note
    assert daemon.fake.plans["plan-1"].state == "running"
    result = await cli(daemon, "reassignments", "--format", "kafka")
    assert result.out.startswith("Current partition reassignments:\norders-0: ")


async def test_a_standby_names_the_leader(daemon: Daemon) -> None:
    daemon.fake.leader_address = "http://10.0.0.7:8080"
    result = await cli(daemon, "pause")
    assert result.code == 2 and "hint: the leading daemon is at --api http://10.0.0.7:8080" in result.err


async def test_no_daemon_exits_3_without_a_traceback(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for args in (("status",), ("plans",), ("pause", "--api", url), ("limits", "a=1")):
        result = await cli(None, *args, env={"REASSIGNDCTL_API": url})
        assert result.code == 3, (args, result)
        assert result.err.startswith(f"reassignd: cannot reach the daemon at {url}: ")
    result = await cli(None, "plans", "--api", "ftp://nowhere")
    assert result.code == 2 and "API URL must be http(s)" in result.err


async def test_watch_without_a_terminal_follows_the_plan_to_its_end(daemon: Daemon, tmp_path: Path) -> None:
    await cli(daemon, "submit", write_plan(tmp_path, drain_plan(count=2)))
    stop = asyncio.Event()

    async def move() -> None:
        while not stop.is_set():
            if ("daemon_status", None) in daemon.fake.calls:  # the watch saw it running: now move it
                daemon.fake.tick(2)
            await asyncio.sleep(0.05)

    mover = asyncio.create_task(move())
    try:
        result = await cli(daemon, "status", "--watch", "--interval", "0.1")
    finally:
        stop.set()
        await mover
    lines = result.out.splitlines()
    assert result.code == 0 and len(lines) >= 2
    assert " plan plan-1 running: " in lines[0] and " plan plan-1 completed: " in lines[-1]
    assert "(100.0%)" in lines[-1]


async def test_history_prints_who_did_what(daemon: Daemon, tmp_path: Path) -> None:
    await cli(daemon, "submit", write_plan(tmp_path, drain_plan(count=1)))
    await cli(daemon, "limits", "reassignment.parallel.partition.count=4")
    result = await cli(daemon, "history")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert [line.split()[2] for line in lines] == ["plan.submitted", "limits.changed"]
    assert all(line.endswith("by reassignd") for line in lines)
    result = await cli(daemon, "history", "--limit", "1", "--kind", "limits.changed", "--json")
    assert [e["kind"] for e in result.json()] == ["limits.changed"]
    queries = [q for call, q in daemon.fake.calls if call == "journal"]
    assert [str(k) for k in queries[-1]["kinds"]] == ["limits.changed"] and queries[-1]["limit"] == 1000


async def test_plans_say_when_each_finished_how_long_it_took_what_it_moved_and_its_name(
    daemon: Daemon, tmp_path: Path
) -> None:
    """The issue: `plans` showed when a plan was submitted, not when it finished, how long it took or what
    it moved; and a plan had no name a person could give it."""
    plan = write_plan(tmp_path, drain_plan(count=2))
    result = await cli(
        daemon, "submit", plan, "--name", "drain broker 1", "--rollback-out", str(tmp_path / "r")
    )
    assert result.code == 0 and result.out.startswith("plan plan-1 (drain broker 1) running:"), result.out
    daemon.fake.tick(200)
    result = await cli(daemon, "plans")
    lines = result.out.splitlines()
    assert lines[0].split() == ["PLAN", "STATE", "END", "(UTC)", "TOOK", "MOVED", "DONE"]
    row = lines[1].split()
    assert row[:2] == ["plan-1", "completed"] and row[-3:] == ["2.0", "GB", "100.0%"], row
    assert lines[2] == "  drain broker 1"
    assert all(len(line) <= 80 for line in lines)
    plans = (await cli(daemon, "plans", "--json")).json()["plans"]
    assert plans[0]["name"] == "drain broker 1" and plans[0]["finished_at"]
    refused = await cli(daemon, "submit", plan, "--name", "bad/name", "--dry-run")
    assert refused.code == 2 and "name" in refused.err


def test_status_says_first_that_the_store_is_unavailable() -> None:
    from datetime import UTC, datetime

    from reassignd.cli.watch import cluster_text

    status = {
        "cluster": {"reachable": True, "since": None, "unreachable_brokers": [], "error": None},
        "store": {
            "available": False,
            "since": "2026-01-01T10:00:00Z",
            "error": "state store /var/lib/reassignd/reassignd.db: cannot commit: database or disk is full",
            "findings": [],
        },
    }
    now = datetime(2026, 1, 1, 10, 5, tzinfo=UTC)
    assert cluster_text(status, now).startswith(
        "STORE UNAVAILABLE since 10:00:00Z (5m"
    ) and "database or disk is full; nothing is written; cluster reachable" in cluster_text(status, now)


def test_status_says_first_that_every_write_is_held_on_store_findings() -> None:
    """`reassignd status` is what the runbook (ReassigndStoreInconsistent) and `recover --help` send the
    operator to for the findings; on main it printed `cluster reachable` / `no plan is running` as if all
    were well while the daemon held every cluster write."""
    from reassignd.cli.watch import cluster_text, idle_lines

    finding = "an empty store, but this cluster's ownership marker says the writer's store reached #108"
    status = {
        "cluster": {"reachable": True, "since": None, "unreachable_brokers": [], "error": None},
        "store": {"available": True, "since": None, "error": None, "findings": [finding]},
        "state": "idle",
    }
    text = cluster_text(status)
    assert text.startswith("HELD: the state store does not explain itself") and finding in text, text
    assert "reassignd recover" in text and text.endswith("cluster reachable")
    assert idle_lines(status)[0] == text


async def test_recover_takes_a_mode_and_names_a_bad_one(daemon: Daemon) -> None:
    result = await cli(daemon, "recover")
    assert result.code == 2 and "--mode: required: adopt or cleanup" in result.err, result.err
    result = await cli(daemon, "recover", "--mode", "clean")
    assert result.code == 2 and "--mode" in result.err and "'clean'" in result.err, result.err
    result = await cli(daemon, "recover", "--adopt", "--mode", "cleanup")
    assert result.code == 2 and "--adopt contradicts --mode cleanup" in result.err, result.err
    result = await cli(daemon, "recover", "--mode", "cleanup")  # a clean store: nothing to recover
    assert result.code == 2 and "nothing to recover" in result.err, result.err
    assert daemon.fake.calls[-1] == ("recover", {"mode": "cleanup"})
