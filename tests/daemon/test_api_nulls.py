"""`null` is refused wherever openapi.json does not mark a request field nullable (issue 31 item 5).

Every request body field of the document is tried against the real controller (and the proposal planner,
in process): a non-nullable field sent as `null` is answered 400 or 422 in the API's error shape, naming
the field and the value, never taken as absent. The nullable ones (the throttle rates: null means no
throttle) are taken. So the document and the parsers agree both ways, for the fields there are now and
for any added later.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from reassignd.daemon.api import create_app, load_openapi
from reassignd.daemon.proposals import ProposalService
from reassignd.model import ClusterSnapshot
from tests.daemon.inprocess import InProcessDaemon
from tests.daemon.test_e2e import LIMITS, fill_plan, scenario

TOKEN = "operator-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOC = load_openapi()

# A body each operation takes (or refuses only for what the cluster holds), with its path.
BASES: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("post", "/v1/plans"): ("/v1/plans?dry_run=true", fill_plan(6)),
    ("patch", "/v1/limits"): ("/v1/limits", {"reassignment.parallel.partition.count": 8}),
    ("patch", "/v1/throttles"): ("/v1/throttles", {"leader.reassignment.throttled.rate": 30_000_000}),
    ("post", "/v1/reassignments/cancel"): ("/v1/reassignments/cancel", {"topics": "nothing-.*"}),
    ("post", "/v1/placements"): ("/v1/placements", {"num_partitions": 2, "replication_factor": 2}),
    ("post", "/v1/proposals"): ("/v1/proposals", {"goal": "cluster-balance"}),
    ("post", "/v1/limits/reset"): ("/v1/limits/reset", {}),
    ("post", "/v1/recover"): ("/v1/recover", {"mode": "adopt"}),
    ("post", "/v1/brokers/{broker}/decommission"): (
        "/v1/brokers/4/decommission",
        {"drain": False, "reason": "disk failing"},
    ),
}


def resolved(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = DOC
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        schema = node
    return schema


def nullable(schema: dict[str, Any]) -> bool:
    schema = resolved(schema)
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(nullable(option) for option in schema.get("anyOf", ()))


def request_fields() -> list[tuple[str, str, tuple[str | int, ...], bool]]:
    """(method, path, where in the body, nullable) for every field of every documented request body, and
    of the entries of its arrays of objects (a plan's partitions)."""
    found = []
    for path, item in DOC["paths"].items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "requestBody" not in operation:
                continue
            body = resolved(operation["requestBody"]["content"]["application/json"]["schema"])
            for name, schema in body.get("properties", {}).items():
                found.append((method, path, (name,), nullable(schema)))
                items = resolved(resolved(schema).get("items", {}))
                for inner, inner_schema in items.get("properties", {}).items():
                    found.append((method, path, (name, 0, inner), nullable(inner_schema)))
    return found


FIELDS = request_fields()


def with_null(body: dict[str, Any], where: tuple[str | int, ...]) -> dict[str, Any]:
    if len(where) == 1:
        return {**body, str(where[0]): None}
    name, index, inner = where
    entries = [dict(e) for e in body[str(name)]] if body.get(str(name)) else [{"topic": "t", "partition": 0}]
    entries[int(index)][str(inner)] = None
    return {**body, str(name): entries}


@pytest.fixture
async def client() -> AsyncIterator[TestClient[Any, Any]]:
    d = InProcessDaemon(scenario(6), LIMITS)
    await d.controller.start()
    await d.cycle()

    async def view() -> ClusterSnapshot:
        snapshot: ClusterSnapshot = await d.admin.snapshot(with_sizes=True)
        return snapshot

    app = create_app(
        d.controller,
        token=TOKEN,
        metrics_handler=lambda _: None,  # type: ignore[arg-type,return-value]
        openapi=DOC,
        proposals=ProposalService(view, on_spark=False),
    )
    async with TestClient(TestServer(app)) as served:
        yield served


def test_every_request_body_is_covered() -> None:
    assert {(m, p) for m, p, _, _ in FIELDS} == set(BASES)
    assert len(FIELDS) > 50


async def test_the_bases_are_taken(client: TestClient[Any, Any]) -> None:
    for (method, _), (path, body) in BASES.items():
        if path == "/v1/recover":
            continue  # 409: nothing to recover (a clean store); checked for null below all the same
        response = await client.request(method.upper(), path, json=body, headers=AUTH)
        assert response.status == 200, (path, await response.text())


@pytest.mark.parametrize(
    ("method", "template", "where", "may_be_null"), FIELDS, ids=[f"{m} {p} {w}" for m, p, w, _ in FIELDS]
)
async def test_null_is_refused_unless_documented_nullable(
    client: TestClient[Any, Any], method: str, template: str, where: tuple[str | int, ...], may_be_null: bool
) -> None:
    path, base = BASES[(method, template)]
    response = await client.request(method.upper(), path, json=with_null(base, where), headers=AUTH)
    answer = await response.json()
    if may_be_null:
        assert response.status == 200, answer
        return
    assert response.status in (400, 422), (where, answer)
    error = answer["error"]
    assert set(error) <= {"code", "message", "problems", "details"}
    names = [str(w) for w in where if isinstance(w, str)]
    named = [p for p in error.get("problems", ()) if any(n in p["field"] + p["where"] for n in names)]
    assert named, (where, error)
    assert any("None" in p["message"] or "null" in p["message"] for p in named), (where, error)


async def test_an_empty_ordering_is_refused_by_patch_limits(client: TestClient[Any, Any]) -> None:
    """Issue 31 item 5: PATCH /v1/limits took `reassignment.ordering: []`."""
    before = await (await client.get("/v1/limits", headers=AUTH)).json()
    for value in ([], "", " , "):
        response = await client.patch("/v1/limits", json={"reassignment.ordering": value}, headers=AUTH)
        answer = await response.json()
        assert response.status == 400, answer
        [problem] = answer["error"]["problems"]
        assert problem["field"] == "reassignment.ordering" and "names no sort key" in problem["message"]
    assert await (await client.get("/v1/limits", headers=AUTH)).json() == before
