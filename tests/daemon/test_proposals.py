"""Plan proposals over the HTTP API and `reassignd propose`: the API's shapes and refusals with the planner
in-process (the same core as on Spark), and one daemon run against the simulator that plans on its warm
Spark session, then executes the proposal."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from reassignd.daemon.api import create_app, load_openapi, prometheus_metrics_handler, start_api
from reassignd.daemon.proposals import ProposalService
from reassignd.model import ClusterSnapshot, ReassignmentPlan
from tests.daemon.fake_service import FakeControllerService, small_cluster
from tests.daemon.test_api_openapi import conforms
from tests.services.procs import free_port

TOKEN = "proposals-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOC = load_openapi()
RESULT = {"$ref": "#/components/schemas/ProposalResult"}


def _service(fake: FakeControllerService) -> ProposalService:
    async def read() -> ClusterSnapshot:
        return ClusterSnapshot.build(fake.brokers.values(), fake.partitions.values(), cluster_id="lkc-42")

    return ProposalService(read, on_spark=False, name="orders-eu")


@pytest.fixture
async def client() -> AsyncIterator[tuple[TestClient[Any, Any], FakeControllerService]]:
    fake = small_cluster()
    app = create_app(
        fake,
        token=TOKEN,
        metrics_handler=prometheus_metrics_handler(),
        openapi=DOC,
        proposals=_service(fake),
    )
    async with TestClient(TestServer(app)) as c:
        yield c, fake


async def test_a_proposal_is_a_plan_the_daemon_accepts(client: tuple[TestClient[Any, Any], Any]) -> None:
    c, _ = client
    resp = await c.post("/v1/proposals", json={"goal": "replica-balance", "threshold": "10%"}, headers=AUTH)
    assert resp.status == 200
    body = await resp.json()
    assert conforms(body, RESULT) == []
    assert body["cluster"] == "orders-eu" and body["cluster_id"] == "lkc-42"
    f = body["figures"]
    assert f["replicas_moved"] == f["lower_bound"] > 0 and f["stopped"] == "within threshold"
    plan = ReassignmentPlan.from_dict(body["plan"])
    assert plan.targets and all({4, 5, 6} & set(r) for r in plan.targets.values())
    resp = await c.post("/v1/plans", json=body["plan"], headers=AUTH)
    assert resp.status == 201, await resp.text()


async def test_exclusions_reach_the_planner(client: tuple[TestClient[Any, Any], Any]) -> None:
    c, fake = client
    request = {
        "goal": "cluster-balance",
        "exclude_brokers": [4],
        "exclude_topics": "logs",
        "size_aware": True,
    }
    body = await (await c.post("/v1/proposals", json=request, headers=AUTH)).json()
    assert body["figures"]["excluded_brokers"] == [4]
    for entry in body["plan"]["partitions"]:
        assert entry["topic"] != "logs"
        before = fake.partitions[
            next(
                tp
                for tp in fake.partitions
                if tp.topic == entry["topic"] and tp.partition == entry["partition"]
            )
        ]
        assert 4 not in set(entry["replicas"]) - set(before.replicas)


async def test_bad_requests_name_every_problem(client: tuple[TestClient[Any, Any], Any]) -> None:
    c, _ = client
    resp = await c.post(
        "/v1/proposals",
        json={
            "goal": "tidy",
            "threshold": 10,
            "exclude_brokers": "4",
            "capacity": {"default": {"disk_bytes": -1}},
        },
        headers=AUTH,
    )
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert (
        conforms(
            await resp.json(),
            DOC["components"]["responses"]["BadRequest"]["content"]["application/json"]["schema"],
        )
        == []
    )
    fields = {(p["where"], p["field"]) for p in error["problems"]}
    assert {("request", "goal"), ("request", "threshold"), ("request", "exclude_brokers")} <= fields
    assert ("default", "disk_bytes") in fields
    assert any("write 10% (= 0.1)" in p["message"] for p in error["problems"])
    resp = await c.post("/v1/proposals", json={"goal": "drain", "brokers": [99]})
    assert resp.status == 401  # every POST needs the token


async def test_without_proposals_the_route_says_how_to_enable_them() -> None:
    app = create_app(small_cluster(), token=TOKEN, metrics_handler=prometheus_metrics_handler(), openapi=DOC)
    async with TestClient(TestServer(app)) as c:
        resp = await c.post("/v1/proposals", json={"goal": "replica-balance"}, headers=AUTH)
        assert resp.status == 503
        assert "proposals.enable" in (await resp.json())["error"]["message"]


async def test_reassignd_propose_writes_a_plan(tmp_path: Path) -> None:
    import asyncio

    fake = small_cluster()
    app = create_app(
        fake, token=TOKEN, metrics_handler=prometheus_metrics_handler(), openapi=DOC, proposals=_service(fake)
    )
    port = free_port()
    runner = await start_api(app, "127.0.0.1", port)
    token = tmp_path / "token"
    token.write_text(TOKEN)
    out = tmp_path / "proposal.json"
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "reassignd",
            "propose",
            "--api",
            f"http://127.0.0.1:{port}",
            "--token-file",
            str(token),
            "--goal",
            "replica-balance",
            "--exclude-brokers",
            "6",
            "--out",
            str(out),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await proc.communicate()
    finally:
        await runner.cleanup()
    assert proc.returncode == 0, stderr.decode()
    assert stdout.decode().startswith("orders-eu: ") and "within threshold" in stdout.decode()
    plan = ReassignmentPlan.from_json(out.read_text())
    assert plan.targets and all(6 not in r for r in plan.targets.values())
    assert json.loads(out.read_text())["version"] == 1
