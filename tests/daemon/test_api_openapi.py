"""The OpenAPI document and the router agree both ways, and live responses match the documented schemas.

`conforms` below checks the subset of JSON Schema the document uses (type, properties, required,
additionalProperties, items, enum, const, minimum, maximum, exclusiveMinimum, minItems, maxItems,
uniqueItems, minProperties, minLength, pattern, anyOf, allOf, not, contains, $ref). It is strict about that
subset: an unknown keyword fails, so the document cannot drift past it. tests/daemon/test_api_fuzz.py runs
schemathesis against a real daemon on top.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from reassignd.daemon.api import (
    OPEN_PATHS,
    STATUS_BY_CODE,
    create_app,
    load_openapi,
    prometheus_metrics_handler,
)
from reassignd.daemon.proposals import ProposalService
from reassignd.daemon.settings import RUNTIME_KEYS
from reassignd.model import ClusterSnapshot
from tests.daemon.fake_service import FakeControllerService, drain_plan, small_cluster

TOKEN = "s3cret-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOC = load_openapi()
METHODS = {"get", "post", "patch", "put", "delete"}
_ANNOTATIONS = {"description", "format", "default", "title", "example"}
_CHECKED = {"type", "properties", "required", "additionalProperties", "items", "enum", "const", "minimum"}
_CHECKED |= {"minItems", "minProperties", "$ref", "maximum", "exclusiveMinimum", "maxItems", "uniqueItems"}
_CHECKED |= {"minLength", "pattern", "anyOf", "allOf", "not", "contains"}


def resolve(ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = DOC
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def conforms(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Every mismatch between value and schema, each with its JSON path."""
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    assert not unknown, f"schema keyword(s) {unknown} at {where} are not checked by this test"
    if "$ref" in schema:
        return conforms(value, resolve(schema["$ref"]), where)
    errors: list[str] = []
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else types
        if not any(_is(value, t) for t in allowed):
            return [f"{where}: {value!r} is not of type {types}"]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} != const {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} not in {schema['enum']}")
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        errors.append(f"{where}: {value!r} < minimum {schema['minimum']}")
    if "maximum" in schema and _is(value, "number") and value > schema["maximum"]:
        errors.append(f"{where}: {value!r} > maximum {schema['maximum']}")
    if "exclusiveMinimum" in schema and _is(value, "number") and value <= schema["exclusiveMinimum"]:
        errors.append(f"{where}: {value!r} <= exclusiveMinimum {schema['exclusiveMinimum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if "anyOf" in schema and all(conforms(value, option, where) for option in schema["anyOf"]):
        errors.append(f"{where}: {value!r} matches none of anyOf")
    for part in schema.get("allOf", []):
        errors += conforms(value, part, where)
    if "not" in schema and not conforms(value, schema["not"], where):
        errors.append(f"{where}: {value!r} matches the schema under not")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: fewer than {schema['minItems']} items")
        if len(value) > schema.get("maxItems", len(value)):
            errors.append(f"{where}: more than {schema['maxItems']} items")
        if schema.get("uniqueItems") and len({repr(v) for v in value}) != len(value):
            errors.append(f"{where}: items are not unique")
        if "contains" in schema and all(conforms(v, schema["contains"], where) for v in value):
            errors.append(f"{where}: no item matches contains")
        for index, item in enumerate(value):
            errors += conforms(item, schema.get("items", {}), f"{where}[{index}]")
    if isinstance(value, dict):
        if len(value) < schema.get("minProperties", 0):
            errors.append(f"{where}: fewer than {schema['minProperties']} properties")
        errors += [f"{where}: missing {key!r}" for key in schema.get("required", []) if key not in value]
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                errors += conforms(item, properties[key], f"{where}.{key}")
            elif extra is False:
                errors.append(f"{where}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                errors += conforms(item, extra, f"{where}.{key}")
    return errors


def _is(value: Any, kind: str) -> bool:
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    }
    return bool(checks[kind](value))


def routed_operations() -> set[tuple[str, str]]:
    app = create_app(small_cluster(), token=TOKEN, metrics_handler=prometheus_metrics_handler(), openapi=DOC)
    return {
        (route.resource.canonical, route.method.lower())
        for route in app.router.routes()
        if route.resource is not None and route.method != "HEAD"
    }


def documented_operations() -> set[tuple[str, str]]:
    return {(path, method) for path, item in DOC["paths"].items() for method in item if method in METHODS}


# --- sync ------------------------------------------------------------------------------------------------


def test_every_route_is_documented_and_every_documented_path_is_routed() -> None:
    routed, documented = routed_operations(), documented_operations()
    assert routed - documented == set(), "routes missing from reassignd/daemon/openapi.json"
    assert documented - routed == set(), "documented operations the app does not route"
    assert len(routed) == 32  # issue 29: brokers, (de|re)commission, two re-target routes, anomalies


def test_the_document_is_openapi_3_1_and_every_reference_resolves() -> None:
    assert DOC["openapi"].startswith("3.1")

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                assert resolve(node["$ref"]) is not None, where
            for key, child in node.items():
                walk(child, f"{where}/{key}")
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, f"{where}[{index}]")

    walk(DOC, "#")
    operation_ids = [op["operationId"] for _, m in documented_operations() for op in [DOC["paths"][_][m]]]
    assert len(operation_ids) == len(set(operation_ids))


def test_every_operation_but_the_probes_declares_the_bearer_token_and_401() -> None:
    for path, method in documented_operations():
        operation = DOC["paths"][path][method]
        if path in OPEN_PATHS:
            assert "security" not in operation, (path, method)
        else:
            assert operation["security"] == [{"bearerAuth": []}], (path, method)
            assert "401" in operation["responses"], (path, method)
        if method != "get":
            assert "403" in operation["responses"], (path, method)


def test_the_documented_limits_are_the_engines() -> None:
    for schema in ("Limits", "LimitsChange"):
        documented = set(DOC["components"]["schemas"][schema]["properties"])
        assert documented == set(RUNTIME_KEYS), schema


def test_the_documented_error_codes_are_the_api_codes() -> None:
    documented = DOC["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    assert set(documented) == set(STATUS_BY_CODE)


# --- live responses --------------------------------------------------------------------------------------


@pytest.fixture
async def recorded() -> AsyncIterator[list[tuple[str, str, int, Any]]]:
    """A session that touches every operation (and several errors), recording every response."""
    fake: FakeControllerService = small_cluster()

    async def view() -> ClusterSnapshot:
        return ClusterSnapshot.build(fake.brokers.values(), fake.partitions.values())

    proposals = ProposalService(view, on_spark=False)
    app = create_app(
        fake, token=TOKEN, metrics_handler=prometheus_metrics_handler(), openapi=DOC, proposals=proposals
    )
    seen: list[tuple[str, str, int, Any]] = []
    async with TestClient(TestServer(app)) as client:

        async def call(method: str, template: str, path: str | None = None, **kwargs: Any) -> Any:
            resp = await client.request(method, path or template, headers=AUTH, **kwargs)
            body = await resp.json() if resp.content_type == "application/json" else await resp.text()
            seen.append((template, method.lower(), resp.status, body))
            return body

        await call("GET", "/v1/status")
        await call("POST", "/v1/plans", "/v1/plans?dry_run=true", json=drain_plan())
        await call("POST", "/v1/plans", json={"version": 1, "partitions": [{"topic": "x", "partition": 0}]})
        plan_id = (await call("POST", "/v1/plans", json=drain_plan(count=4)))["plan_id"]
        await call("POST", "/v1/plans", json={"version": 1, "partitions": drain_plan()["partitions"][4:]})
        await call("POST", "/v1/plans", json=drain_plan(count=1))
        fake.tick(3)
        await call("PATCH", "/v1/throttles", json={"follower.reassignment.throttled.rate": 900_000})
        fake.tick(3)
        for template in ("/v1/plans", "/v1/status", "/v1/limits", "/v1/throttles", "/v1/reassignments"):
            await call("GET", template)
        await call("GET", "/v1/plans/{plan_id}", f"/v1/plans/{plan_id}")
        await call("GET", "/v1/plans/{plan_id}", "/v1/plans/missing")
        await call("PATCH", "/v1/limits", json={"reassignment.parallel.partition.count": 2})
        await call("PATCH", "/v1/limits", json={"reassignment.parallel.partition.count": "two"})
        await call("PATCH", "/v1/throttles", json={"leader.reassignment.throttled.rate": 2_000_000})
        for action in ("pause", "resume", "cancel"):
            await call("POST", f"/v1/plans/{{plan_id}}/{action}", f"/v1/plans/{plan_id}/{action}")
        for action in ("pause", "resume", "cancel"):
            await call("POST", f"/v1/{action}")
        await call("POST", "/v1/reassignments/cancel", json={"topics": "(", "partitions": []})
        await call(
            "POST", "/v1/reassignments/cancel", json={"partitions": [{"topic": "orders", "partition": 0}]}
        )
        await call("POST", "/v1/reassignments/cancel", json={"topics": "lo.*"})
        await call("POST", "/v1/recover", json={"mode": "adopt"})  # 409: nothing to recover
        await call("POST", "/v1/placements", json={"num_partitions": 4, "replication_factor": 2})
        await call("PATCH", "/v1/limits", json={"reassignment.ordering": "leader_moves,larger_first"})
        await call("POST", "/v1/limits/reset", json={"keys": ["reassignment.ordering"]})
        await call("PATCH", "/v1/throttles", json={"leader.reassignment.throttled.rate": None})
        await call("POST", "/v1/placements", json={"num_partitions": 4})
        await call("GET", "/v1/journal", "/v1/journal?kind=plan.submitted,limits.changed&limit=5")
        await call("GET", "/v1/journal", "/v1/journal?since=yesterday")
        await call("POST", "/v1/proposals", json={"goal": "cluster-balance", "size_aware": True})
        await call("POST", "/v1/proposals", json={"goal": "drain"})
        await call(
            "POST", "/v1/brokers/{broker}/decommission", "/v1/brokers/4/decommission", json={"drain": True}
        )
        await call("POST", "/v1/brokers/{broker}/decommission", "/v1/brokers/99/decommission")
        await call(
            "POST", "/v1/brokers/{broker}/decommission", "/v1/brokers/4/decommission", json={"dran": 1}
        )
        await call("GET", "/v1/brokers")
        await call("POST", "/v1/plans", "/v1/plans?allow_decommissioned=true&dry_run=true", json=drain_plan())
        await call("POST", "/v1/brokers/{broker}/recommission", "/v1/brokers/4/recommission")
        await call("POST", "/v1/retarget")
        await call("POST", "/v1/plans/{plan_id}/retarget", "/v1/plans/missing/retarget")
        anomaly_id = (await call("GET", "/v1/anomalies"))["anomalies"][0]["id"]
        approve = "/v1/anomalies/{anomaly_id}/approve"
        await call("POST", approve, f"/v1/anomalies/{anomaly_id}/approve")
        await call("POST", approve, f"/v1/anomalies/{anomaly_id}/approve")  # 409: executing already
        await call("POST", approve, "/v1/anomalies/no-such/approve")
        for template in ("/healthz", "/readyz", "/metrics", "/openapi.json"):
            await call("GET", template)
        fake.ready = False
        await call("GET", "/readyz")
        fake.leader_address = "http://10.1.1.1:8080"
        await call("POST", "/v1/pause")
        resp = await client.post("/v1/plans", json=drain_plan())
        seen.append(("/v1/plans", "post", resp.status, await resp.json()))
    yield seen


async def test_live_responses_match_the_documented_schemas(recorded: list[tuple[str, str, int, Any]]) -> None:
    covered = set()
    statuses = set()
    for template, method, status, body in recorded:
        responses = DOC["paths"][template][method]["responses"]
        response = responses.get(str(status)) or responses.get("default")
        assert response is not None, f"{method.upper()} {template} answered {status}, which is not documented"
        if "$ref" in response:
            response = resolve(response["$ref"])
        content = response["content"]
        media = "application/json" if "application/json" in content else "text/plain"
        errors = conforms(body, content[media]["schema"])
        assert errors == [], f"{method.upper()} {template} {status}: {errors}"
        covered.add((template, method))
        statuses.add(status)
    assert covered == documented_operations()
    assert statuses >= {200, 201, 400, 401, 404, 409, 421, 422, 503}
    roles = [(t, m, status) for t, m, status, _ in recorded if "/brokers" in t or "retarget" in t]
    assert all(status < 500 for _, _, status in roles), roles  # the documented default hides a 500


def test_the_structural_check_can_fail() -> None:
    status = conforms({"plan_id": 3}, {"$ref": "#/components/schemas/PlanStatus"})
    assert "$.plan_id: 3 is not of type string" in status and "$: missing 'progress'" in status
    placement = {"num_partitions": 1, "replication_factor": True, "x": 1}
    assert conforms(placement, {"$ref": "#/components/schemas/PlacementRequest"}) == [
        "$.replication_factor: True is not of type integer",
        "$: unexpected property 'x'",
    ]
    error = conforms({"error": {"code": "nope", "message": "m"}}, {"$ref": "#/components/schemas/Error"})
    assert len(error) == 1 and error[0].startswith("$.error.code: 'nope' not in")
    with pytest.raises(AssertionError, match="not checked"):
        conforms(1, {"oneOf": []})
    change = {"$ref": "#/components/schemas/LimitsChange"}
    assert conforms({"reassignment.parallel.replica.count": 2**31}, change)
    assert conforms({"leader.reassignment.throttled.rate": 0}, change)
    assert conforms({"reassignment.ordering": ["larger_first", "smaller_first"]}, change)
    assert conforms({"reassignment.ordering": []}, change)  # the engine refuses it too (test_limits)
    assert not conforms(
        {"leader.reassignment.throttled.rate": -1, "reassignment.ordering": "plan_order"}, change
    )
