"""`status --watch` rendering from status documents alone, and the watch loop with a scripted daemon."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from rich.console import Console, Group
from rich.table import Table

from reassignd.cli.watch import render_status, status_lines, watch, watch_lines
from reassignd.client import ApiUnreachable
from reassignd.model import ReassignmentPlan
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
    assert "plan plan-1  running" in text
    assert "980.0 MB / 6.0 GB (16.3%)" in text
    assert "0 / 6 done, 2 moving, 4 waiting" in text
    assert "98.0 MB/s   ETA 51s" in text
    assert "throttle: leader 50.0 MB/s, follower 50.0 MB/s" in text
    rows = {
        cells[1]: cells[2:]
        for line in text.splitlines()
        if len(cells := [c.strip() for c in line.split("│")]) > 2
    }
    assert rows["4"] == ["2/2", "0/2", "-", "50.0 MB/s", "yes", ""]
    assert rows["1"] == ["0/2", "1/2", "50.0 MB/s", "-", "yes", ""]
    assert "waiting: 4 x reassignment.max.incoming.replica.movements.per.broker (broker 4)" in text
    assert "STALLED" not in text


def test_stalled_moves_are_highlighted() -> None:
    status = live_status(**{"follower.reassignment.throttled.rate": 900_000})
    renderable = render_status(status)
    assert isinstance(renderable, Group)
    stalled = [r for r in renderable.renderables if isinstance(r, Table) and "STALLED" in str(r.title)]
    assert len(stalled) == 1 and stalled[0].title_style == "bold red" and stalled[0].row_count == 2
    text = text_of(renderable)
    assert "STALLED moves (2)" in text and "orders-0" in text and "900.0 KB/s" in text and "1.0 MB/s" in text


def test_at_limit_and_offline_brokers_are_styled() -> None:
    status = live_status()
    status["brokers"][5]["online"] = False
    renderable = render_status(status)
    assert isinstance(renderable, Group)
    brokers = next(r for r in renderable.renderables if isinstance(r, Table) and "per-broker" in str(r.title))
    styles = {int(str(brokers.columns[0]._cells[i])): row.style for i, row in enumerate(brokers.rows)}
    assert styles[4] == "yellow" and styles[6] == "red" and styles[1] is None


def test_a_sparse_status_from_another_daemon_still_renders() -> None:
    text = text_of(render_status({"plan_id": "p", "state": "queued"}))
    # a queued plan has not been measured yet: its bytes are unknown, not "0 B of 0 B, 100% done"
    assert "plan p  queued" in text and "unknown" in text and "100.0%" not in text and "ETA unknown" in text
    assert status_lines({"plan_id": "p", "state": "queued"})[0].startswith("plan p queued: bytes unknown")


def test_plain_lines() -> None:
    status = live_status(**{"follower.reassignment.throttled.rate": 900_000})
    lines = status_lines(status, waiting_shown=2)
    assert lines[0].startswith("plan plan-1 running: bytes ")
    assert lines[0].endswith("stalled 2")
    assert "BROKER  IN   OUT  LEADER THROTTLE  FOLLOWER THROTTLE  ONLINE" in lines
    assert "STALLED (2): catch-up rate does not exceed produce rate" in lines
    assert "  ... and 2 more" in lines
    stamped = watch_lines(status, NOW)
    assert stamped[0] == f"2026-01-02T03:04:05Z {lines[0]}"
    assert stamped[1].startswith("2026-01-02T03:04:05Z   STALLED orders-") and len(stamped) == 3


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
    return {"plan_id": "p", "state": state, "progress": {"bytes_total": 100, "bytes_moved": moved}}


def test_watch_without_a_terminal_prints_one_line_per_interval_until_the_end() -> None:
    out, sleeps = io.StringIO(), []
    fetch = scripted(at("running", 10), at("running", 50), ApiUnreachable("no route"), at("completed", 100))
    code = watch(fetch, interval=2.5, out=out, sleep=sleeps.append, now=lambda: NOW)
    lines = out.getvalue().splitlines()
    assert code == 0 and sleeps == [2.5, 2.5, 2.5]
    assert [line.split(" ")[3 if " plan " in line else 1] for line in lines] == [
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
