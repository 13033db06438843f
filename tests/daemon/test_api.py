"""The HTTP API against the in-memory service, through aiohttp's real test server (a loopback socket)."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Gauge

from reassignd import logs
from reassignd.daemon.api import create_app, load_openapi, prometheus_metrics_handler, start_api
from reassignd.model import TopicPartition
from tests.daemon.fake_service import FakeControllerService, drain_plan, small_cluster
from tests.services.procs import free_port

TOKEN = "s3cret-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

# Every route that is not a GET, with a body that would be accepted.
MUTATING = [
    ("POST", "/v1/plans", drain_plan()),
    ("POST", "/v1/plans/plan-1/pause", None),
    ("POST", "/v1/plans/plan-1/resume", None),
    ("POST", "/v1/plans/plan-1/cancel", None),
    ("POST", "/v1/pause", None),
    ("POST", "/v1/resume", None),
    ("POST", "/v1/cancel", None),
    ("PATCH", "/v1/limits", {"reassignment.parallel.partition.count": 9}),
    ("PATCH", "/v1/throttles", {"follower.reassignment.throttled.rate": 1_000_000}),
    ("POST", "/v1/placements", {"num_partitions": 3, "replication_factor": 3}),
]


def make_app(fake: Any, token: str | None = TOKEN, **kwargs: Any) -> web.Application:
    """Reads are served open here (this file tests the routes); test_api_roles.py tests who may read."""
    kwargs.setdefault("reads_open", True)
    registry = CollectorRegistry()
    Gauge("reassignd_test_gauge", "a gauge for the test", registry=registry).set(7)
    return create_app(
        fake,
        token=token,
        metrics_handler=prometheus_metrics_handler(registry),
        openapi=load_openapi(),
        **kwargs,
    )


@pytest.fixture
def fake() -> FakeControllerService:
    return small_cluster()


@pytest.fixture
async def api(fake: FakeControllerService) -> AsyncIterator[TestClient[Any, Any]]:
    async with TestClient(TestServer(make_app(fake))) as client:
        yield client


def assert_error(body: Any, code: str) -> dict[str, Any]:
    assert set(body) == {"error"}, body
    error = body["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"]
    assert set(error) <= {"code", "message", "problems", "details"}
    for problem in error.get("problems", []):
        assert set(problem) == {"where", "field", "message"}
    return dict(error)


async def submit(api: TestClient[Any, Any], plan: Any = None, query: str = "") -> Any:
    resp = await api.post(f"/v1/plans{query}", json=plan or drain_plan(), headers=AUTH)
    return resp.status, await resp.json()


# --- authentication --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), MUTATING)
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer"},
    ],
    ids=["missing", "wrong", "basic-scheme", "empty"],
)
async def test_mutating_routes_refuse_without_the_right_token_and_touch_nothing(  # noqa: PLR0917
    api: TestClient[Any, Any], fake: FakeControllerService, method: str, path: str, body: Any, headers: Any
) -> None:
    resp = await api.request(method, path, json=body, headers=headers)
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"].startswith("Bearer")
    assert_error(await resp.json(), "unauthorized")
    assert fake.calls == []


@pytest.mark.parametrize(("method", "path", "body"), MUTATING)
async def test_mutating_routes_accept_the_right_token(
    api: TestClient[Any, Any], fake: FakeControllerService, method: str, path: str, body: Any
) -> None:
    if "plan-1" in path or path in ("/v1/pause", "/v1/cancel", "/v1/resume"):
        assert (await submit(api))[0] == 201
        if "resume" in path:
            await api.post("/v1/pause", headers=AUTH)
    resp = await api.request(method, path, json=body, headers=AUTH)
    assert resp.status in (200, 201), await resp.text()
    assert fake.calls[-1][0] in {
        "submit_plan",
        "pause",
        "resume",
        "cancel",
        "set_limits",
        "set_throttles",
        "place",
    }


async def test_without_a_configured_token_mutations_are_closed(fake: FakeControllerService) -> None:
    async with TestClient(TestServer(make_app(fake, token=None))) as client:
        resp = await client.post("/v1/plans", json=drain_plan(), headers=AUTH)
        error = assert_error(await resp.json(), "unauthorized")
        assert resp.status == 401 and "no API token" in error["message"]
        assert (await client.get("/v1/plans")).status == 200
    assert fake.calls == [("list_plans", None)]


async def test_the_token_never_reaches_the_log(fake: FakeControllerService) -> None:
    """Through start_api, the daemon's own runner and access log, on a real port."""
    stream = io.StringIO()
    logs.configure("debug", json=True, stream=stream)
    port = free_port()
    runner = await start_api(make_app(fake), "127.0.0.1", port)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as client:
            for headers in (AUTH, {"Authorization": "Bearer wrong-guess-token"}):
                await client.post(f"{base}/v1/plans?dry_run=true", json=drain_plan(), headers=headers)
                await client.patch(f"{base}/v1/limits", json={"nope": 1}, headers=headers)
            await client.get(f"{base}/v1/plans/plan-9", headers=AUTH)
    finally:
        await runner.cleanup()
        logs.configure("info", json=True)
    text = stream.getvalue()
    assert TOKEN not in text and "wrong-guess-token" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    access = [line for line in lines if line["event"] == "http_request"]
    assert len(access) == 5, text
    assert all(line["request_id"] and "headers" not in line for line in access)
    assert {line["status"] for line in access} == {200, 400, 401, 404}


# --- plans -----------------------------------------------------------------------------------------------


async def test_submit_queues_and_the_plan_is_listed_and_described(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    resp = await api.post("/v1/plans", json=drain_plan(), headers=AUTH)
    body = await resp.json()
    assert resp.status == 201 and resp.headers["Location"] == f"/v1/plans/{body['plan_id']}"
    assert body["state"] == "running" and body["bytes_to_move"] == 6_000_000_000
    plans = await (await api.get("/v1/plans")).json()
    assert [p["plan_id"] for p in plans["plans"]] == [body["plan_id"]]
    fake.tick(10)
    status = await (await api.get(f"/v1/plans/{body['plan_id']}")).json()
    assert status == await (await api.get("/v1/status")).json()
    progress = status["progress"]
    assert 0 < progress["bytes_moved"] < progress["bytes_total"]
    assert progress["bytes_moved"] + progress["bytes_remaining"] == progress["bytes_total"]
    assert progress["eta_seconds"] == pytest.approx(
        progress["bytes_remaining"] / progress["rate_bytes_per_sec"]
    )


@pytest.mark.parametrize(
    ("query", "extra"), [("?dry_run=true", {}), ("?dry_run=1", {}), ("", {"dry_run": True})]
)
async def test_dry_run_reports_with_200_and_queues_nothing(
    api: TestClient[Any, Any], fake: FakeControllerService, query: str, extra: dict[str, Any]
) -> None:
    status, body = await submit(api, {**drain_plan(), **extra}, query)
    assert status == 200
    assert body["plan_id"] is None and body["state"] == "dry_run" and body["replicas_to_move"] == 6
    assert fake.plans == {}


async def test_an_option_is_on_when_either_place_turns_it_on_and_non_booleans_are_refused(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    status, body = await submit(api, {**drain_plan(), "dry_run": False}, "?dry_run=true")
    assert status == 200 and body["plan_id"] is None and fake.plans == {}
    status, body = await submit(api, {**drain_plan(), "dry_run": True}, "?dry_run=false")
    assert status == 200 and body["plan_id"] is None and fake.plans == {}
    status, body = await submit(api, drain_plan(), "?dry_run=true&dry_run=false")
    assert status == 400 and assert_error(body, "invalid_request")["problems"][0]["field"] == "dry_run"
    status, body = await submit(api, drain_plan(), "?allow_rf_change=maybe")
    assert status == 400 and "'maybe'" in body["error"]["problems"][0]["message"]
    status, body = await submit(api, {**drain_plan(), "dry_run": "yes"})
    assert status == 400


async def test_malformed_json_names_the_problem(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    resp = await api.post("/v1/plans", data=b'{"version": 1,\n "partitions": [}', headers=AUTH)
    error = assert_error(await resp.json(), "invalid_json")
    assert resp.status == 400 and "line 2 column" in error["message"]
    assert error["details"] == {"line": 2, "column": 17}
    resp = await api.post("/v1/plans", data=b"  ", headers=AUTH)
    assert resp.status == 400 and "empty" in (await resp.json())["error"]["message"]
    resp = await api.post("/v1/plans", data=b"\xff\xfe", headers=AUTH)
    assert resp.status == 400 and "UTF-8" in (await resp.json())["error"]["message"]
    assert fake.calls == []


async def test_plan_parse_errors_are_422_with_every_problem(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    plan = {
        "version": 2,
        "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [1, -2]},
            {"topic": "orders", "partition": 1, "replicas": []},
            {"topic": "", "partition": 2, "replicas": [1]},
        ],
    }
    status, body = await submit(api, plan)
    error = assert_error(body, "invalid_plan")
    assert status == 422 and len(error["problems"]) >= 4
    assert {p["field"] for p in error["problems"]} >= {"version", "replicas", "topic"}
    status, body = await submit(api, [1, 2])  # type: ignore[arg-type]
    assert status == 422 and assert_error(body, "invalid_plan")
    assert fake.plans == {}
    assert all(call == ("submit_plan", {"partitions": 0, "dry_run": True}) for call in fake.calls)


async def test_plans_wrong_for_the_cluster_are_rejected_whole(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    plan = {
        "version": 1,
        "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [4, 5, 9]},
            {"topic": "orders", "partition": 1, "replicas": [4, 5]},
            {"topic": "orders", "partition": 99, "replicas": [1, 2, 3]},
            {"topic": "nope", "partition": 0, "replicas": [1, 2, 3]},
            {"topic": "logs", "partition": 1, "replicas": [4, 5, 6]},
        ],
    }
    status, body = await submit(api, plan)
    problems = assert_error(body, "invalid_plan")["problems"]
    assert status == 422
    assert [(p["where"], p["field"]) for p in problems] == [
        ("logs-1", "partition"),
        ("nope-0", "topic"),
        ("orders-0", "replicas"),
        ("orders-1", "replicas"),
        ("orders-99", "partition"),
    ]
    assert fake.plans == {}
    status, body = await submit(
        api, {"version": 1, "partitions": plan["partitions"][1:2]}, "?allow_rf_change=true"
    )
    assert status == 201


async def test_a_plan_overlapping_an_unfinished_one_conflicts(api: TestClient[Any, Any]) -> None:
    first = (await submit(api))[1]
    second = await submit(api, drain_plan(count=2))
    assert second[0] == 409
    error = assert_error(second[1], "conflict")
    assert error["details"]["plan_id"] == first["plan_id"] and error["details"]["partitions"] == [
        "orders-0",
        "orders-1",
    ]


async def test_lifecycle_transitions(api: TestClient[Any, Any], fake: FakeControllerService) -> None:
    plan_id = (await submit(api))[1]["plan_id"]
    resp = await api.post("/v1/pause", headers=AUTH)
    assert resp.status == 200 and (await resp.json())["state"] == "paused"
    resp = await api.post(f"/v1/plans/{plan_id}/pause", headers=AUTH)
    assert resp.status == 409 and "paused" in assert_error(await resp.json(), "conflict")["message"]
    resp = await api.post(f"/v1/plans/{plan_id}/resume", headers=AUTH)
    assert (await resp.json())["state"] == "running"
    fake.tick(25)
    resp = await api.post("/v1/cancel", headers=AUTH)
    body = await resp.json()
    assert body["state"] == "cancelled" and body["finished_at"]
    assert 0 < body["progress"]["partitions_done"] < 6
    for action in ("pause", "resume", "cancel"):
        resp = await api.post(f"/v1/{action}", headers=AUTH)
        assert resp.status == 409 and "nothing to" in assert_error(await resp.json(), "conflict")["message"]
    resp = await api.post("/v1/plans/plan-77/cancel", headers=AUTH)
    assert resp.status == 404 and assert_error(await resp.json(), "not_found")["details"] == {
        "plan_id": "plan-77"
    }
    resp = await api.get("/v1/status")  # nothing in progress: the idle status, the cluster first
    assert resp.status == 200 and list(await resp.json()) == [
        "cluster",
        "store",
        "plan_id",
        "state",
        "last_cycle",
    ]


async def test_a_queued_plan_starts_when_the_running_one_completes(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    first = (await submit(api, drain_plan(count=3)))[1]["plan_id"]
    second = (await submit(api, {"version": 1, "partitions": drain_plan()["partitions"][3:]}))[1]
    assert second["state"] == "queued"
    for _ in range(60):
        fake.tick(5)
    plans = {p["plan_id"]: p["state"] for p in (await (await api.get("/v1/plans")).json())["plans"]}
    assert plans == {first: "completed", second["plan_id"]: "completed"}
    assert fake.partitions[TopicPartition("orders", 0)].replicas == (4, 2, 3)


# --- tuning, cluster, health -----------------------------------------------------------------------------


async def test_limits_change_all_or_nothing(api: TestClient[Any, Any]) -> None:
    before = await (await api.get("/v1/limits")).json()
    resp = await api.patch(
        "/v1/limits",
        json={
            "reassignment.parallel.partition.count": 3,
            "reassignment.bogus": 1,
            "colour": "red",
            "reassignment.parallel.replica.count": 0,
            "reassignment.ordering": ["fastest_first"],
        },
        headers=AUTH,
    )
    problems = assert_error(await resp.json(), "invalid_request")["problems"]
    assert resp.status == 400 and {p["field"] for p in problems} == {
        "reassignment.bogus",
        "colour",
        "reassignment.parallel.replica.count",
        "reassignment.ordering",
    }
    assert await (await api.get("/v1/limits")).json() == before
    resp = await api.patch("/v1/limits", json={"reassignment.parallel.partition.count": 3}, headers=AUTH)
    assert (await resp.json())["reassignment.parallel.partition.count"] == 3
    resp = await api.patch("/v1/limits", json=[1], headers=AUTH)
    assert resp.status == 400 and "got list" in (await resp.json())["error"]["problems"][0]["message"]


async def test_throttles_apply_to_in_flight_moves(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    await submit(api)
    fake.tick(1)
    resp = await api.patch(
        "/v1/throttles", json={"follower.reassignment.throttled.rate": 500_000}, headers=AUTH
    )
    body = await resp.json()
    assert body["follower.reassignment.throttled.rate"] == 500_000
    assert body["applied"]["4"] == {"follower": 500_000}
    fake.tick(1)
    status = await (await api.get("/v1/status")).json()
    assert status["stalled"] and {s["broker"] for s in status["stalled"]} == {4}
    assert (await api.get("/v1/throttles")).status == 200


async def test_reassignments_show_ours_and_foreign(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    plan_id = (await submit(api))[1]["plan_id"]
    fake.tick(1)
    items = (await (await api.get("/v1/reassignments")).json())["reassignments"]
    owners = {(r["topic"], r["partition"]): (r["owner"], r["plan_id"]) for r in items}
    assert owners[("logs", 1)] == ("foreign", None)
    assert owners[("orders", 0)] == ("reassignd", plan_id)
    ours = next(r for r in items if r["topic"] == "orders" and r["partition"] == 0)
    assert ours["replicas"] == [4, 2, 3, 1] and ours["adding"] == [4] and ours["removing"] == [1]


async def test_placements_come_from_the_placement_package(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    request = {"num_partitions": 6, "replication_factor": 3, "seed": 1}
    resp = await api.post("/v1/placements", json=request, headers=AUTH)
    body = await resp.json()
    assert resp.status == 200 and body["placer"] == "multi-level" and body["deferred"] is False
    assert [p["partition_id"] for p in body["replica_placement"]] == list(range(6))
    for p in body["replica_placement"]:
        racks = [fake.brokers[b].rack for b in p["replicas"]]
        assert len(set(racks)) == 3, racks
    bad = {"num_partitions": 0, "replication_factor": "3", "broker_ids": [1, 99], "colour": "red"}
    resp = await api.post("/v1/placements", json=bad, headers=AUTH)
    problems = assert_error(await resp.json(), "invalid_request")["problems"]
    assert resp.status == 400 and {"colour", "replication_factor"} <= {p["field"] for p in problems}


async def test_health_readiness_metrics_and_the_document(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    assert (await (await api.get("/healthz")).json())["status"] == "ok"
    resp = await api.get("/readyz")
    assert resp.status == 200 and (await resp.json())["ready"] is True
    fake.ready = False
    resp = await api.get("/readyz")
    body = await resp.json()
    assert resp.status == 503 and body["ready"] is False and body["error"]["code"] == "unavailable"
    status, body = await submit(api)
    assert status == 503 and assert_error(body, "unavailable")
    resp = await api.get("/metrics")
    assert resp.status == 200 and resp.content_type == "text/plain"
    assert "reassignd_test_gauge 7.0" in await resp.text()
    assert await (await api.get("/openapi.json")).json() == load_openapi()


async def test_a_standby_points_to_the_leader(api: TestClient[Any, Any], fake: FakeControllerService) -> None:
    fake.leader_address = "http://10.0.0.2:8080"
    status, body = await submit(api)
    assert status == 421 and assert_error(body, "not_leader")["details"] == {"leader": "http://10.0.0.2:8080"}
    assert (await (await api.get("/readyz")).json())["role"] == "standby"


# --- the envelope ----------------------------------------------------------------------------------------


async def test_unknown_route_wrong_method_and_oversize_bodies_use_the_error_shape(
    api: TestClient[Any, Any], fake: FakeControllerService
) -> None:
    resp = await api.get("/v2/nothing")
    assert resp.status == 404 and "/v2/nothing" in assert_error(await resp.json(), "not_found")["message"]
    resp = await api.post("/v1/nothing", headers=AUTH)
    assert resp.status == 404
    resp = await api.delete("/v1/limits", headers=AUTH)
    error = assert_error(await resp.json(), "method_not_allowed")
    assert resp.status == 405 and error["details"]["allowed"] == ["GET", "HEAD", "PATCH"]
    assert resp.headers["Allow"] == "GET, HEAD, PATCH"
    async with TestClient(TestServer(make_app(fake, max_body_bytes=1024))) as small:
        resp = await small.post("/v1/plans", data=b"x" * 4096, headers=AUTH)
        error = assert_error(await resp.json(), "payload_too_large")
        assert resp.status == 413 and error["details"] == {"max_bytes": 1024}
    assert fake.calls == []


async def _raw(port: int, data: bytes) -> tuple[str, dict[str, str], bytes]:
    """`data` sent as it is; the status line, the headers and the body of the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return status, headers, body


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        # issue 31 item 5: aiohttp answered these in plain text, echoing the line, before any middleware
        (b"GET /v1/status?x=" + b"A" * 9000 + b" HTTP/1.1\r\nHost: h\r\n\r\n", "longer than 8190 bytes"),
        (
            b"GET /v1/status HTTP/1.1\r\nHost: h\r\nX-Big: " + b"A" * 9000 + b"\r\n\r\n",
            "longer than 8190 bytes",
        ),
        (b"AAAA\x01 / HTTP/1.1\r\n\r\n", "not a valid HTTP request"),
    ],
    ids=["request line", "header", "method"],
)
async def test_a_request_aiohttp_cannot_parse_gets_the_error_shape(
    fake: FakeControllerService, data: bytes, fragment: str
) -> None:
    port = free_port()
    runner = await start_api(make_app(fake), "127.0.0.1", port)
    try:
        status, headers, body = await _raw(port, data)
    finally:
        await runner.cleanup()
    assert status.split()[1] == "400", (status, body[:200])
    assert headers["content-type"].startswith("application/json")  # and closed: _raw read to its end
    assert headers["x-request-id"]
    error = assert_error(json.loads(body), "invalid_request")
    assert fragment in error["message"] and b"AAAA" not in body  # never echoed
    assert fake.calls == []


async def test_every_response_carries_a_request_id(api: TestClient[Any, Any]) -> None:
    seen = set()
    for method, path in [("GET", "/healthz"), ("GET", "/nope"), ("POST", "/v1/plans"), ("GET", "/v1/status")]:
        resp = await api.request(method, path)
        seen.add(resp.headers["X-Request-Id"])
    assert len(seen) == 4
    resp = await api.get("/healthz", headers={"X-Request-Id": "trace-42.a"})
    assert resp.headers["X-Request-Id"] == "trace-42.a"
    resp = await api.get("/healthz", headers={"X-Request-Id": "bad id\twith spaces"})
    assert resp.headers["X-Request-Id"] != "bad id\twith spaces" and len(resp.headers["X-Request-Id"]) == 32


class _Broken(FakeControllerService):
    def list_plans(self) -> list[dict[str, Any]]:
        raise RuntimeError("database password=hunter2 exploded")


async def test_a_bug_is_a_500_in_the_error_shape_without_internals() -> None:
    fake = small_cluster()
    broken = _Broken(fake.brokers.values(), fake.partitions.values())
    async with TestClient(TestServer(make_app(broken))) as client:
        resp = await client.get("/v1/plans")
        error = assert_error(await resp.json(), "internal")
        assert resp.status == 500 and "hunter2" not in error["message"]
        assert resp.headers["X-Request-Id"]


async def test_refused_commands_are_reported_by_code() -> None:
    refused: list[str] = []
    fake = small_cluster()
    async with TestClient(TestServer(make_app(fake, on_refused=refused.append))) as client:
        await client.post("/v1/plans", json=drain_plan())
        await client.post("/v1/plans", json={"version": 9}, headers=AUTH)
        await client.post("/v1/pause", headers=AUTH)
        await client.patch("/v1/limits", json={"reassignment.parallel.partition.count": 2}, headers=AUTH)
        await client.get("/v1/status")
        await client.get("/v2/nothing")
    assert refused == ["unauthorized", "invalid_plan", "conflict"]


async def test_a_big_plan_is_parsed_off_the_loop_and_refused_with_every_problem(
    api: TestClient[Any, Any],
) -> None:
    plan = {
        "version": 1,
        "partitions": [{"topic": "big", "partition": p, "replicas": [1, 2, 3]} for p in range(5000)],
    }
    status, body = await submit(api, plan)
    problems = assert_error(body, "invalid_plan")["problems"]
    assert status == 422 and len(problems) == 5000 and problems[-1]["where"] == "big-4999"


class _Infinite(FakeControllerService):
    def plan_status(self, plan_id: str | None = None) -> dict[str, Any]:
        status = super().plan_status(plan_id)
        status["progress"]["eta_seconds"] = float("inf")
        return status


async def test_non_finite_numbers_become_null() -> None:
    fake = small_cluster()
    infinite = _Infinite(fake.brokers.values(), fake.partitions.values())
    async with TestClient(TestServer(make_app(infinite))) as client:
        await client.post("/v1/plans", json=drain_plan(), headers=AUTH)
        resp = await client.get("/v1/status")
        assert resp.status == 200 and (await resp.json())["progress"]["eta_seconds"] is None
        assert "Infinity" not in await resp.text()
