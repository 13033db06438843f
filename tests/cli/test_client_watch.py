"""`status --watch` rendering from status documents alone, and the watch loop with a scripted daemon."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from rich.console import Console

from reassignd.cli.watch import (
    StatusView,
    render_status,
    status_lines,
    summary_line,
    view_lines,
    watch,
    watch_lines,
)
from reassignd.client import ApiUnreachable
from reassignd.config_keys import FOLLOWER_REASSIGNMENT_THROTTLED_RATE as FOLLOWER_RATE
from reassignd.config_keys import LEADER_REASSIGNMENT_THROTTLED_RATE as LEADER_RATE
from reassignd.model import ReassignmentPlan
from reassignd.units import format_rate
from tests.cli.guide_drain import draining
from tests.daemon.fake_service import drain_plan, small_cluster

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def live_status(seconds: float = 10, **limits: Any) -> dict[str, Any]:
    """A status document as the fake service produces it after `seconds` of moving."""
    fake = small_cluster(limits=limits or None)
    plan_id = asyncio.run(fake.submit_plan(ReassignmentPlan.from_dict(drain_plan())))["plan_id"]
    fake.tick(seconds)
    return fake.plan_status(plan_id)


def text_of(renderable: Any, width: int = 120) -> str:
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_live_view_shows_bars_eta_brokers_against_limits_and_throttles() -> None:
    status = live_status()
    text = text_of(render_status(status))
    assert "plan plan-1  running  started 2023-11-14 22:13:20Z" in text
    assert "980.0 MB of 6.0 GB (16.3%)" in text
    assert "0 of 6 done, 2 moving, 4 waiting" in text
    assert "rate 98.0 MB/s   ETA 51s   throttle: leader 50.0 MB/s, follower 50.0 MB/s" in text
    rows = [line.split() for line in text.splitlines() if line[:6].strip().isdigit()]
    assert rows[0] == ["4", "2/2", "0/2", "-", "50.0", "MB/s"], "the receiving broker first"
    assert rows[1] == ["1", "0/2", "1/2", "50.0", "MB/s", "-"]
    assert "waiting 4: 4 reassignment.max.incoming.replica.movements.per.broker (broker 4)" in text
    assert "STALLED" not in text


def test_stalled_moves_are_listed_in_red() -> None:
    status = live_status(**{"follower.reassignment.throttled.rate": 900_000})
    lines = view_lines(status, width=80, now=NOW)
    stalled = [line for line in lines if line.text.startswith("STALLED")]
    assert [line.text for line in stalled] == ["STALLED 2: the new replica does not catch up with producers"]
    assert stalled[0].style == "bold red"
    moves = [line for line in lines if " -> broker " in line.text]
    assert [line.style for line in moves] == ["red", "red"]
    assert moves[0].text == "  orders-0 -> broker 4: catch-up 900.0 KB/s, produce 1.0 MB/s"


def test_offline_brokers_and_limits_lowered_under_the_moves_are_marked() -> None:
    status = live_status()
    status["brokers"][5]["online"] = False
    status["brokers"][3]["limit_in"] = 1  # broker 4: 2 in flight, the limit lowered to 1 meanwhile
    lines = view_lines(status, width=80, now=NOW)
    rows = {line.text.split()[0]: line for line in lines if line.text[:6].strip().isdigit()}
    assert rows["4"].text.split()[1] == "2/1!" and rows["4"].style == "yellow"
    assert rows["6"].style == "red" and rows["1"].style is None and rows["5"].style == "dim"
    legend = [line.text for line in lines if line.text.startswith("!")]
    assert legend == ["! above its limit: lowered while moves ran; they finish, none starts"]
    order = [int(line.text.split()[0]) for line in lines if line.text[:6].strip().isdigit()]
    assert order == [4, 1, 2, 6, 3, 5], "receiving, sending, offline, then the rest"


def test_partitions_that_cannot_finish_while_a_broker_is_down_are_named() -> None:
    status = live_status()
    shown = [{"topic": "orders", "partition": i, "brokers": [5], "in_flight": True} for i in range(4)]
    status["offline_waits"] = {"partitions": 14, "brokers": [5], "shown": shown}
    lines = view_lines(status, width=80, now=NOW, height=24)
    text = " ".join(line.text.strip() for line in lines if line.style == "bold yellow")
    assert text == (
        "cannot finish while broker 5 is down: 14 partition(s) (orders-0, orders-1, orders-2, ...); "
        "they complete when it is back, or re-target them"
    )
    assert all(len(line.text) <= 80 for line in lines)


def test_moves_without_a_leader_side_throttle_are_said_in_the_full_status() -> None:
    status = live_status()
    assert not any("leader side" in line for line in status_lines(status, now=NOW))
    status["leader_unthrottled"] = [{"topic": "orders", "partition": 0, "out_of_sync": [3]}]
    lines = status_lines(status, now=NOW)
    assert lines[-2:] == [
        "leader side unthrottled for 1 move(s): orders-0 (3 out of sync); the moving",
        "  replicas are throttled as followers, the lagging ones catch up unthrottled",
    ]


def test_a_sparse_status_from_another_daemon_still_renders() -> None:
    text = text_of(render_status({"plan_id": "p", "state": "queued"}))
    # a queued plan has not been measured yet: its bytes are unknown, not "0 B of 0 B, 100% done"
    assert "plan p  queued" in text and "unknown" in text and "100.0%" not in text and "ETA unknown" in text
    # what it does not report is said, not taken as reachable
    assert status_lines({"plan_id": "p", "state": "queued"})[:3] == [
        "cluster: not reported by this daemon",
        "plan p  queued",
        "bytes      unknown",
    ]


def test_plain_lines_fit_80_columns_without_bars() -> None:
    status = live_status(**{"follower.reassignment.throttled.rate": 900_000})
    lines = status_lines(status, now=NOW)
    assert max(len(line) for line in lines) <= 80
    assert lines[:1] == ["cluster reachable"] and lines[2] == "bytes      0 B of 6.0 GB (0.0%)"
    assert "BROKER   IN  OUT  LEADER RATE  FOLLOWER RATE" in lines
    assert "STALLED 2: the new replica does not catch up with producers" in lines
    stamped = watch_lines(status, NOW)
    assert stamped[0] == f"2026-01-02T03:04:05Z {summary_line(status)}"
    assert stamped[1].startswith("2026-01-02T03:04:05Z   STALLED orders-") and len(stamped) == 3


async def test_the_view_fits_the_terminal_and_keeps_every_receiving_broker() -> None:
    """The guide's drain with moves stalled: at 80x24 the brokers move to a grid and the stalled moves
    beyond what fits are counted; with room, the table and every stalled move are there."""
    daemon, plan_id = await draining(40, **{"follower.reassignment.throttled.rate": 1_500_000})
    status = daemon.controller.plan_status(plan_id)
    receiving = {b["broker"] for b in status["brokers"] if b["moves_in"]}
    for width, height in ((80, 24), (100, 30), (200, 50), (60, 20)):
        lines = [line.text for line in view_lines(status, width=width, height=height - 1)]
        assert len(lines) <= height - 1 and max(len(line) for line in lines) <= width, (width, height)
        assert lines[0] == "cluster reachable" and lines[1].startswith(f"plan {plan_id}  running")
        shown = {int(m[1]) for line in lines for m in re.finditer(r"(?:^|\s)(\d+) in \d", line)}
        shown |= {int(line.split()[0]) for line in lines if re.match(r"^\s*\d+\s+\d+/", line)}
        assert receiving <= shown, (width, height, "\n".join(lines))
        stalled = [line for line in lines if " -> broker " in line]
        assert stalled and (len(stalled) == len(status["stalled"]) or any("more stalled" in x for x in lines))


async def test_a_finished_plan_shows_its_duration_outcome_and_brokers() -> None:
    daemon, plan_id = await draining(1)
    await daemon.run(seconds=50_000)
    status = daemon.controller.plan_status(plan_id)
    lines = [line.text for line in view_lines(status, width=80, height=40, now=NOW)]
    assert max(len(line) for line in lines) <= 80
    started, finished = status["started_at"], status["finished_at"]
    assert lines[0] == "cluster reachable" and started and finished
    assert lines[1].startswith(f"plan {plan_id}  completed  ran ")
    assert "ended: 23 on target" in lines
    assert "brokers: replicas gained and lost, the highest throttle rates applied" in lines
    assert "BROKER  REPLICAS IN  OUT  BYTES IN  LEADER RATE  FOLLOWER RATE" in lines
    rows = {int(line.split()[0]): line.split() for line in lines if re.match(r"^\s*\d+\s+\d+\s+\d+\s", line)}
    assert rows[12][1:3] == ["0", "23"], "the drained broker lost its 23 replicas"
    gained = {b: int(r[1]) for b, r in rows.items() if int(r[1])}
    assert sum(gained.values()) == 23 and 12 not in gained
    assert all(r[-2:] == ["50.0", "MB/s"] for b, r in rows.items() if b in gained), "follower rate applied"
    assert not any("STALLED" in line or "waiting" in line for line in lines)


def test_the_view_is_laid_out_again_for_each_terminal_size() -> None:
    status = live_status()
    for width in (80, 132):
        console = Console(file=io.StringIO(), width=width, height=24, record=True, color_system=None)
        console.print(StatusView(status))
        drawn = console.export_text().splitlines()
        assert drawn[0] == "cluster reachable" and drawn[1].startswith("plan plan-1  running")
        assert max(len(line) for line in drawn) <= width
        assert len(drawn) <= 23


def scripted(*steps: Any) -> Callable[[], Any]:
    """A fetch function replaying statuses (dicts) and failures (exceptions)."""
    queue: Iterator[Any] = iter(steps)

    def fetch() -> Any:
        step = next(queue)
        if isinstance(step, Exception):
            raise step
        return step

    return fetch


def at(state: str, moved: int) -> dict[str, Any]:
    return {
        "cluster": {"reachable": True, "since": None, "unreachable_brokers": [], "error": None},
        "plan_id": "p",
        "state": state,
        "progress": {"bytes_total": 100, "bytes_moved": moved},
    }


def test_watch_without_a_terminal_prints_one_line_per_interval_until_the_end() -> None:
    out, sleeps = io.StringIO(), []
    fetch = scripted(at("running", 10), at("running", 50), ApiUnreachable("no route"), at("completed", 100))
    code = watch(fetch, interval=2.5, out=out, sleep=sleeps.append, now=lambda: NOW)
    lines = out.getvalue().splitlines()
    assert code == 0 and sleeps == [2.5, 2.5, 2.5]
    assert [line.split(" ")[5 if " plan " in line else 1] for line in lines] == [
        "running:",
        "running:",
        "unreachable:",
        "completed:",
    ]
    assert "unreachable: no route; retrying" in lines[2]
    assert "(50.0%)" in lines[1] and "(100.0%)" in lines[3]


@pytest.mark.parametrize(("state", "code"), [("completed", 0), ("cancelled", 1), ("failed", 1)])
def test_watch_exit_code_follows_the_plans_end(state: str, code: int) -> None:
    out = io.StringIO()
    assert watch(scripted(at("paused", 1), at(state, 1)), interval=1, out=out, sleep=lambda _: None) == code


def test_watch_as_json_prints_one_document_per_line() -> None:
    out = io.StringIO()
    watch(
        scripted(at("running", 1), at("completed", 100)),
        interval=1,
        out=out,
        as_json=True,
        sleep=lambda _: None,
    )
    assert [json.loads(line)["state"] for line in out.getvalue().splitlines()] == ["running", "completed"]


def test_the_first_failure_is_the_callers_to_report() -> None:
    with pytest.raises(ApiUnreachable):
        watch(scripted(ApiUnreachable("down")), interval=1, out=io.StringIO(), sleep=lambda _: None)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_watch_on_a_terminal_draws_live_until_the_end() -> None:
    out = _Terminal()
    console = Console(file=out, force_terminal=True, width=100, color_system="standard")
    fetch = scripted(at("running", 10), ApiUnreachable("refused"), at("completed", 100))
    assert watch(fetch, interval=1, out=out, sleep=lambda _: None, console=console) == 0
    screen = out.getvalue()
    assert "\x1b[" in screen and "completed" in screen and "refused; retrying" in screen


def test_the_bytes_done_never_exceed_the_fixed_total_when_producers_wrote_meanwhile() -> None:
    """The demo's last lines read `54.4 GB of 51.6 GB (99.4%)`: the copies of what was written since counted
    against the fixed total. The part of the total done is shown, and the growth apart."""
    from reassignd.cli.watch import _bytes_text

    p = {"bytes_moved": 54.4e9, "bytes_total": 51.6e9, "percent": 99.4, "bytes_grown": 3.1e9}
    assert _bytes_text(p) == "51.3 GB of 51.6 GB (99.4%), +3.1 GB written since"  # an older daemon
    assert _bytes_text({"bytes_moved": 2e9, "bytes_total": 10e9}) == "2.0 GB of 10.0 GB (20.0%)"
    assert _bytes_text({**p, "bytes_done": 51.29e9}) == "51.3 GB of 51.6 GB (99.4%), +3.1 GB written since"


def test_the_bytes_done_agree_with_the_percentage_and_never_fall() -> None:
    """Issue 27: `11.5 GB of 290.5 GB (4.2%)` then `7.2 GB ... (5.5%)` seconds later (moved less growth),
    and `0 B of 290.5 GB (10.4%)` while paused. The figure shown is the daemon's `bytes_done`: the
    percentage of the fixed total."""
    from reassignd.cli.watch import _bytes_text

    total = 290.5e9
    shown = [
        _bytes_text(
            {"bytes_total": total, "percent": pct, "bytes_done": pct / 100 * total, "bytes_moved": mv}
        )
        for pct, mv in ((4.2, 12.5e9), (5.5, 16.9e9), (10.4, 31.0e9))
    ]
    assert [s.split(" of ")[0] for s in shown] == ["12.2 GB", "16.0 GB", "30.2 GB"]


def test_an_eta_that_never_comes_is_said_as_never_with_its_figures() -> None:
    status = live_status()
    reason = "never at this rate: producers write 2.0 MB/s into orders-0, its copy into broker 4 gets"
    reason += " at most 1.5 MB/s"
    status["progress"] = {**status["progress"], "eta_seconds": None, "eta_reason": reason}
    assert "rate 98.0 MB/s   ETA never at this rate" in status_lines(status, now=NOW)
    assert f"ETA {reason}," in watch_lines(status, NOW)[0]
    status["progress"]["eta_reason"] = "2 partition(s) wait for offline broker(s) 5"
    assert "ETA unknown (2 partition(s) wait for offline broker(s) 5)" in watch_lines(status, NOW)[0]


@pytest.mark.parametrize(
    ("rates", "eta", "rate"),
    [
        (
            {
                LEADER_RATE: 150_000_000_000,
                FOLLOWER_RATE: 150_000_000_000,
            },
            4.2815e9,
            999_900_000,
        ),
        (
            {
                LEADER_RATE: 1_500_000_000_000,
                FOLLOWER_RATE: 999_000_000_000,
            },
            10_000_000,
            98_000_000,
        ),
        ({LEADER_RATE: None, FOLLOWER_RATE: None}, None, 0),
    ],
)
def test_the_throttle_line_never_wraps_in_80_columns(
    rates: dict[str, Any], eta: float | None, rate: float
) -> None:
    """The issue: at 80 columns the rate/ETA/throttle line wrapped in the middle of the throttle."""
    status = live_status()
    status["throttles"] = {**(status.get("throttles") or {}), **rates}
    progress = {**status["progress"], "eta_seconds": eta, "rate_bytes_per_sec": rate}
    status["progress"] = {**progress, "eta_reason": None if eta else "no rate yet"}
    lines = status_lines(status, width=80, now=NOW)
    assert max(len(line) for line in lines) <= 80
    whole = (
        f"throttle: leader {format_rate(rates[LEADER_RATE])}, follower {format_rate(rates[FOLLOWER_RATE])}"
    )
    assert [line for line in lines if "throttle:" in line] == [
        next(line for line in lines if line.endswith(whole))
    ], lines


def test_a_paused_plans_view_says_paused_not_an_eta() -> None:
    """The issue: a paused plan's watch showed a rate and an ETA of 49554 days."""
    status = {**live_status(), "state": "paused"}
    lines = status_lines(status, width=80, now=NOW)
    text = "\n".join(lines)
    assert "paused: 2 moves in flight finish, none starts; `reassignd resume` goes on" in text
    assert "ETA" not in text and "rate " not in text
    assert "throttle: leader 50.0 MB/s, follower 50.0 MB/s" in text
