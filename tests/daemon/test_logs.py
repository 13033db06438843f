"""Log lines for people: a line per step started and finished, and a read that finds nothing is not a
refusal."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from structlog.testing import capture_logs

from reassignd import logs
from reassignd.store.base import EventKind
from tests.daemon.fake_service import small_cluster
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_api import AUTH, make_app
from tests.daemon.test_e2e import LIMITS, fill_plan, scenario


@pytest.mark.usefixtures("debug_logs")  # a CLI run in process before it may have left the level at warning
async def test_every_step_started_and_finished_has_its_line() -> None:
    d = InProcessDaemon(scenario(6), LIMITS, 1.0)
    plan = {(e["topic"], e["partition"]): e["replicas"] for e in fill_plan(6)["partitions"]}
    with capture_logs() as logs:
        await d.submit(plan_of(plan))
        await d.run(seconds=7200)
    finished = [e for e in logs if e["event"] == "step finished"]
    started = [e for e in logs if e["event"] == "step started"]
    journal = await d.journal(EventKind.STEP_FINISHED)
    assert len(finished) == len(journal) == len(started) > len(plan)
    for line in finished:
        assert line["log_level"] == "info"
        assert {"plan", "partition", "step", "target", "bytes", "seconds"} <= set(line)
    moved = {(e.tp, e.step_index): e.data["bytes"] for e in journal}
    assert sorted(moved.values()) == sorted(line["bytes"] for line in finished)


@pytest.mark.usefixtures("debug_logs")
async def test_a_read_that_finds_nothing_is_not_logged_as_a_refusal() -> None:
    async with TestClient(TestServer(make_app(small_cluster()))) as client:
        with capture_logs() as logs:
            assert (await client.get("/v1/plans/plan-9", headers=AUTH)).status == 404
            assert (await client.post("/v1/pause", headers=AUTH)).status == 409
    refusals: list[dict[str, Any]] = [e for e in logs if e["event"] == "api_refused"]
    assert [(e["method"], e["path"], e["status"]) for e in refusals] == [("POST", "/v1/pause", 409)]
    assert [e["log_level"] for e in logs if e["event"] == "api_not_found"] == ["debug"]


def test_an_http_access_line_is_debug() -> None:
    """The issue: 80% of a daemon's lines were `http_request` at info (every scrape and every poll of a
    `status --watch`). At info a log says what happened; the access log is there at debug."""
    from types import SimpleNamespace

    from reassignd.daemon.api import AccessLog

    request = SimpleNamespace(method="GET", path="/metrics", remote="127.0.0.1")
    response = SimpleNamespace(status=200, headers={})
    for level, lines in (("info", []), ("debug", [("http_request", "debug")])):
        stream = io.StringIO()
        logs.configure(level, json=True, stream=stream)
        try:
            AccessLog(None, "").log(request, response, 0.002)  # type: ignore[arg-type]
        finally:
            logs.configure("info", json=True)
        printed = [json.loads(line) for line in stream.getvalue().splitlines()]
        assert [(e["event"], e["level"]) for e in printed] == lines
