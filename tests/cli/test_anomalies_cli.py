"""`reassignd anomalies` as an operator runs it, against the daemon's API over the in-memory service (one
broker failure proposed, tests/daemon/fake_service.py)."""

from __future__ import annotations

import asyncio
import io
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from reassignd.cli.anomalies import anomaly_lines, described, watch_anomalies
from reassignd.client import ApiUnreachable
from reassignd.engine.anomalies import Anomaly, AnomalyKind, AnomalyState
from tests.cli.test_client import Daemon, cli, daemon
from tests.daemon.fake_service import _proposed_fix

__all__ = ["daemon"]
pytestmark = pytest.mark.slow


async def test_list_approve_and_a_second_approval_refused(daemon: Daemon) -> None:
    listed = await cli(daemon, "anomalies")
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    anomaly_id = lines[1].split(":")[0]
    assert lines[0] == "self-healing: propose; 1 anomaly"
    assert lines[1] == f"{anomaly_id}: broker 4 offline too long: proposed"
    assert lines[2] == "  fix: drain, 1 partition(s), 1.0 MB, rehearsed 1m35s of cluster time"
    assert lines[3] == f"  `reassignd anomalies approve {anomaly_id}` runs it"
    approved = await cli(daemon, "anomalies", "approve", anomaly_id)
    assert approved.code == 0, approved.err
    assert approved.out.splitlines()[0] == f"{anomaly_id}: broker 4 offline too long: executing"
    assert "plan plan-heal: `reassignd status plan-heal` follows it" in approved.out
    again = await cli(daemon, "anomalies", "approve", anomaly_id)
    assert again.code != 0 and "executing" in again.err
    assert (await cli(daemon, "anomalies", "--json")).json()["anomalies"][0]["state"] == "executing"


async def test_approve_without_an_id_or_an_unknown_one_is_refused_naming_it(daemon: Daemon) -> None:
    missing = await cli(daemon, "anomalies", "approve")
    assert missing.code != 0 and "approve needs an id" in missing.err
    unknown = await cli(daemon, "anomalies", "approve", "no-such")
    assert unknown.code != 0 and "no anomaly 'no-such'" in unknown.err


async def _listed(daemon: Daemon, times: int) -> None:
    """Until the watch has listed the anomalies `times` times more than before this test's changes."""

    def listed() -> int:
        return sum(1 for call, _ in daemon.fake.calls if call == "anomalies")

    wanted = listed() + times
    while listed() < wanted:  # noqa: ASYNC110  # the fake counts requests; nothing signals them
        await asyncio.sleep(0.05)


async def _then(daemon: Daemon, anomaly_id: str, final: AnomalyState, reason: str = "") -> None:
    """While the CLI watches: the operator approves, then the fix ends `final`, each after the watch has
    read the state before it (a CLI that takes seconds to start on a loaded machine must still see each)."""
    await _listed(daemon, 1)
    await daemon.fake.approve_anomaly(anomaly_id)
    await _listed(daemon, 2)
    executing = daemon.fake.anomaly_book.get(anomaly_id)
    assert executing is not None
    book = daemon.fake.anomaly_book.with_anomaly(executing.to(final, executing.last_seen + 1, reason=reason))
    daemon.fake.anomaly_book = book


@pytest.mark.parametrize(
    ("final", "code", "reason"),
    [(AnomalyState.FIXED, 0, ""), (AnomalyState.IGNORED, 1, "its plan was cancelled")],
)
async def test_watch_an_anomaly_prints_a_line_per_change_until_it_is_terminal(
    daemon: Daemon, final: AnomalyState, code: int, reason: str
) -> None:
    (anomaly,) = daemon.fake.anomaly_book.anomalies
    changes = asyncio.create_task(_then(daemon, anomaly.id, final, reason))
    watched = await cli(daemon, "anomalies", "--watch", anomaly.id, "--interval", "0.2")
    await changes
    assert watched.code == code, watched.err
    lines = watched.out.splitlines()
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    expected = [
        rf"{stamp} {anomaly.id}: broker 4 offline too long: proposed",
        rf"{stamp} {anomaly.id}: broker 4 offline too long: executing \(plan plan-heal\)",
        rf"{stamp} {anomaly.id}: broker 4 offline too long: {final.value} \(plan plan-heal\)"
        + (f": {reason}" if reason else ""),
    ]
    assert len(lines) == 3 and all(re.fullmatch(e, line) for e, line in zip(expected, lines, strict=True)), (
        lines
    )


async def test_watch_an_unknown_anomaly_is_refused_naming_it(daemon: Daemon) -> None:
    watched = await cli(daemon, "anomalies", "--watch", "no-such", "--interval", "0.1")
    assert watched.code != 0 and "no anomaly 'no-such'" in watched.err


def test_watch_every_anomaly_until_ctrl_c_with_a_line_for_each_new_one_and_each_change() -> None:
    """Without an id: every anomaly's changes, new ones as they come, until interrupted (Ctrl-C); a
    daemon out of reach for a while is said once, and the watch goes on."""
    first = _proposed_fix(1000.0)
    spread = Anomaly(
        "rack-spread-cluster-990", AnomalyKind.RACK_SPREAD, (1, 2, 3), 990.0, 1000.0, partitions=("t-0",)
    )
    listings: list[Any] = [
        [first],
        [first],
        ApiUnreachable("daemon at http://x not reachable"),
        ApiUnreachable("daemon at http://x not reachable"),
        [first.to(AnomalyState.EXPIRED, 1001.0, reason="the broker is back"), spread],
    ]

    def fetch() -> dict[str, Any]:
        if not listings:
            raise KeyboardInterrupt
        item = listings.pop(0)
        if isinstance(item, Exception):
            raise item
        return {"mode": "propose", "anomalies": [a.to_json() for a in item]}

    out = io.StringIO()
    at = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    with pytest.raises(KeyboardInterrupt):
        watch_anomalies(fetch, None, interval=1.0, out=out, sleep=lambda _: None, now=lambda: at)
    assert out.getvalue().splitlines() == [
        f"2026-11-27T12:00:00Z {first.id}: broker 4 offline too long: proposed",
        "2026-11-27T12:00:00Z daemon at http://x not reachable; retrying",
        f"2026-11-27T12:00:00Z {first.id}: broker 4 offline too long: expired: the broker is back",
        "2026-11-27T12:00:00Z rack-spread-cluster-990: 1 partition(s) spanning fewer racks than they could: "
        "detected",
    ]


def _fetcher(listings: list[Any]) -> Any:
    def fetch() -> dict[str, Any]:
        if not listings:
            raise AssertionError("the watch should have ended")
        item = listings.pop(0)
        if isinstance(item, Exception):
            raise item
        return {"mode": "propose", "anomalies": [a.to_json() for a in item]}

    return fetch


def test_watch_id_survives_a_daemon_restart_mid_fix() -> None:
    """A restarted daemon, or the standby that takes over, lists no anomaly until its first check reads
    them from the state store. `--watch ID` (a script waiting on the fix) must wait through that, not
    end with `no anomaly` (exit 2) while the fix runs, nor while a proposed one waits for approval: the
    anomaly comes back as it was."""
    executing = (
        _proposed_fix(1000.0)
        .to(AnomalyState.APPROVED, 1001.0)
        .to(AnomalyState.EXECUTING, 1002.0, plan_id="plan-heal")
    )
    fetch = _fetcher(
        [
            [executing],
            ApiUnreachable("daemon at http://x not reachable"),
            [],  # restarted, not yet the writer or not yet checked
            [],
            [executing.to(AnomalyState.FIXED, 1010.0)],
        ]
    )
    out = io.StringIO()
    at = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    code = watch_anomalies(fetch, executing.id, interval=1.0, out=out, sleep=lambda _: None, now=lambda: at)
    assert code == 0, out.getvalue()
    assert out.getvalue().splitlines()[-1].endswith("fixed (plan plan-heal)")

    proposed = _proposed_fix(1000.0)
    out = io.StringIO()
    listings = [[proposed], [], [proposed], [proposed.to(AnomalyState.EXPIRED, 1020.0)]]
    code = watch_anomalies(
        _fetcher(listings), proposed.id, interval=1.0, out=out, sleep=lambda _: None, now=lambda: at
    )
    assert code == 1 and ": expired" in out.getvalue().splitlines()[-1], out.getvalue()
    assert "not listed now" in out.getvalue() and "state store" in out.getvalue(), out.getvalue()


def test_a_failed_log_dir_is_described_by_its_broker_and_partitions() -> None:
    anomaly = {
        "id": "log-dir-offline-3_b-1795783832",
        "kind": "log_dir_offline",
        "brokers": [3],
        "partitions": ["t-0", "t-1"],
        "state": "detected",
    }
    assert anomaly_lines(anomaly)[0] == (
        "log-dir-offline-3_b-1795783832: 2 partition(s) in a failed log dir of broker 3: detected"
    )


def test_a_failed_log_dir_is_described_by_its_path_or_paths() -> None:
    anomaly = {
        "id": "log-dir-offline-3_b-1",
        "kind": "log_dir_offline",
        "brokers": [3],
        "partitions": ["t-0"],
    }
    assert described({**anomaly, "log_dir": "/b"}) == "1 partition(s) in failed log dir /b of broker 3"
    both = {**anomaly, "log_dir": "/b,/c"}
    assert described(both) == "1 partition(s) in failed log dirs /b,/c of broker 3"


def test_the_plan_line_follows_a_running_fix_and_points_to_an_ended_ones_outcome() -> None:
    anomaly = {"id": "broker-failure-4-1", "kind": "broker_failure", "brokers": [4], "plan_id": "p1"}
    running = anomaly_lines({**anomaly, "state": "executing"})
    assert running[-1] == "  plan p1: `reassignd status p1` follows it"
    ended = anomaly_lines({**anomaly, "state": "fixed"})
    assert ended[-1] == "  plan p1: `reassignd status p1` shows how it ended"


@pytest.mark.parametrize(
    ("measured", "said"),
    [
        (
            {"produce_measured_seconds": 61.0, "plan_produce_bytes_per_sec": 30_000.0},
            ", producers at 30.0 KB/s",
        ),
        (
            {"produce_measured_seconds": 0.0, "plan_produce_bytes_per_sec": 0.0},
            ", no produce rate (a lower bound)",
        ),
        ({}, ""),  # proposed before the rates were measured: nothing said of them
    ],
)
def test_the_fix_line_says_what_producers_write_in_its_rehearsal(
    measured: dict[str, float], said: str
) -> None:
    figures = {"partitions": 3, "bytes_to_move": 600_000_000, "predicted_duration_seconds": 95.0, **measured}
    anomaly = {
        "id": "broker-failure-4-1",
        "kind": "broker_failure",
        "brokers": [4],
        "state": "proposed",
        "proposal": {"rehearsal": figures},
    }
    assert anomaly_lines(anomaly)[1] == (
        f"  fix: drain, 3 partition(s), 600.0 MB, rehearsed 1m35s of cluster time{said}"
    )
