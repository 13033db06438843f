"""GET /v1/journal and `reassignd history`: the journal a person can read, with who made each change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from reassignd.cli.client import history_line
from reassignd.daemon.api import create_app
from reassignd.daemon.journal import parse_query
from reassignd.model import InvalidInputError, ReassignmentPlan
from reassignd.store.actor import acting_as
from reassignd.store.base import Event, EventKind
from reassignd.store.sqlite import SqliteStore
from tests.daemon.inprocess import InProcessDaemon
from tests.daemon.test_e2e import LIMITS, fill_plan, scenario

TOKEN = "operator-token-0123456789abcdef"


async def served(d: InProcessDaemon) -> TestClient:
    from reassignd.daemon.app import load_openapi

    app = create_app(
        d.controller,
        token=TOKEN,
        metrics_handler=lambda _: None,
        openapi=load_openapi(),  # type: ignore[arg-type]
    )
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


def auth(user: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if user is not None:
        headers["X-Reassignd-User"] = user
    return headers


async def test_the_journal_says_who_changed_what_and_when() -> None:
    """The issue: the journal was only readable with sqlite3, and said nothing of who. A pause over the API
    is by the operator token and the name its client gave; the start of the plan is the daemon's own."""
    d = InProcessDaemon(scenario(6), LIMITS)
    plan_id = await d.submit(ReassignmentPlan.from_dict(fill_plan(6)))
    await d.controller.cycle()  # the plan starts; it is far from done
    client = await served(d)
    try:
        assert (await client.post("/v1/pause", headers=auth("alice@ops-1"))).status == 200
        assert (await client.post("/v1/resume", headers=auth())).status == 200
        response = await client.get(
            f"/v1/journal?plan={plan_id}&kind=plan.paused,plan.resumed", headers=auth()
        )
        assert response.status == 200
        page = await response.json()
        paused, resumed = page["entries"]
        assert paused["kind"] == "plan.paused" and paused["plan_id"] == plan_id
        assert paused["by"] == {
            "via": "api",
            "role": "operator",
            "remote": "127.0.0.1",
            "name": "alice@ops-1",
        }
        assert "name" not in resumed["by"] and resumed["by"]["role"] == "operator"
        assert page["next_after"] is None
        everything = await (await client.get(f"/v1/journal?plan={plan_id}&limit=2", headers=auth())).json()
        assert (
            len(everything["entries"]) == 2 and everything["next_after"] == everything["entries"][-1]["seq"]
        )
        started = next(e for e in everything["entries"] if e["kind"] == "plan.started")
        assert started["by"] == {"via": "self"}
        refused = await client.get("/v1/journal?kind=plan.pause&limt=3", headers=auth())
        body = await refused.json()
        assert refused.status == 400
        messages = {p["field"]: p["message"] for p in body["error"]["problems"]}
        assert "did you mean plan.paused?" in messages["kind"] and "did you mean limit?" in messages["limt"]
        line = history_line(paused)
        assert "plan.paused" in line and "by alice@ops-1 (operator token, 127.0.0.1)" in line
    finally:
        await client.close()


def test_events_written_under_an_actor_carry_it_and_the_daemons_own_do_not(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    try:
        with acting_as({"via": "sighup"}):
            store.append(Event(EventKind.LIMITS_CHANGED, data={"x": 1}))
        store.append(Event(EventKind.LIMITS_CHANGED, data={"x": 2}))
        assert [e.data for e in store.journal()] == [{"x": 1, "by": {"via": "sighup"}}, {"x": 2}]
    finally:
        store.close()


@pytest.mark.parametrize(
    ("query", "parsed"),
    [
        ({}, {"plan": None, "kinds": None, "since": None, "until": None, "after": 0, "limit": 100}),
        ({"since": ["2026-11-27T03:00:00Z"]}, {"since": 1795748400.0}),
        ({"since": ["2026-11-27T03:00:00"]}, {"since": 1795748400.0}),
        ({"until": ["1795748400"]}, {"until": 1795748400.0}),
        (
            {"kind": ["step.started", "plan.paused"]},
            {"kinds": [EventKind.STEP_STARTED, EventKind.PLAN_PAUSED]},
        ),
        ({"after": ["7"], "limit": ["1000"]}, {"after": 7, "limit": 1000}),
    ],
)
def test_journal_queries(query: dict[str, list[str]], parsed: dict[str, Any]) -> None:
    assert parse_query(query).items() >= parsed.items()


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"since": ["yesterday"]}, "since"),
        ({"limit": ["0"]}, "limit"),
        ({"limit": ["1001"]}, "limit"),
        ({"after": ["-1"]}, "after"),
        ({"plan": ["a", "b"]}, "plan"),
        ({"kind": ["nope"]}, "kind"),
        ({"colour": ["red"]}, "colour"),
    ],
)
def test_bad_journal_queries_name_the_field(query: dict[str, list[str]], field: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_query(query)
    assert [p.field for p in refused.value.problems] == [field]
