"""The control API in-process (no Kafka client involved): state, brokers, produce, time, errors."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from reassignd.model import snapshot_from_dict
from reassignd.sim.model import SimCluster
from reassignd.sim.runner import SimRuntime
from reassignd.sim.scenario import load_scenario

SCENARIO: dict[str, Any] = {
    "brokers": [{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"id": 3, "rack": "a"}],
    "topics": [
        {
            "name": "t",
            "partitions": 2,
            "replication_factor": 2,
            "partition_bytes": 1000,
            "assignment": [[1, 2], [2, 3]],
        },
    ],
}


TWO_DIRS: dict[str, Any] = {
    **SCENARIO,
    "brokers": [{"id": 1, "rack": "a", "log_dirs": ["/a", "/b"]}, *SCENARIO["brokers"][1:]],
}
"""Broker 1 with two log dirs, /a its metadata log dir (the first)."""


@pytest.fixture
def scenario() -> dict[str, Any]:
    """The simulated cluster; a test names another with `@pytest.mark.parametrize("scenario", [...])`."""
    return SCENARIO


@pytest.fixture
async def runtime(scenario: dict[str, Any]) -> AsyncIterator[SimRuntime]:
    sim = SimRuntime(SimCluster.from_scenario(load_scenario(scenario), seed=3), time_scale=0)
    await sim.start()
    try:
        yield sim
    finally:
        await sim.stop()


@pytest.fixture
async def http(runtime: SimRuntime) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=runtime.control_url) as session:
        yield session


async def _call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    async with http.request(method, path, json=body) as response:
        return response.status, await response.json()


def _refused(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


async def test_state_and_snapshot(http: aiohttp.ClientSession) -> None:
    status, state = await _call(http, "GET", "/state")
    assert status == 200
    assert state["time_scale"] == 0
    assert set(state["listeners"]) == {"1", "2", "3"}
    status, snapshot = await _call(http, "GET", "/snapshot")
    assert status == 200
    parsed = snapshot_from_dict(snapshot)
    assert parsed.read_at is not None and abs(parsed.read_at - time.time()) < 60  # when, on the wall clock
    assert sorted(parsed.brokers) == [1, 2, 3]
    assert len(parsed.partitions) == 2


async def test_advance_only_while_paused(http: aiohttp.ClientSession, runtime: SimRuntime) -> None:
    status, body = await _call(http, "POST", "/advance", {"seconds": 12.5})
    assert (status, body["now"]) == (200, pytest.approx(12.5))
    assert runtime.cluster.now == pytest.approx(12.5)
    status, body = await _call(http, "POST", "/time-scale", {"scale": 2})
    assert status == 200
    status, body = await _call(http, "POST", "/advance", {"seconds": 1})
    assert status == 409
    assert body["field"] == "time_scale"


async def test_clock_follows_wall_time_times_scale(http: aiohttp.ClientSession, runtime: SimRuntime) -> None:
    before = runtime.cluster.now
    await _call(http, "POST", "/time-scale", {"scale": 100})
    await asyncio.sleep(0.5)
    await _call(http, "POST", "/time-scale", {"scale": 0})
    elapsed = runtime.cluster.now - before
    assert 20 <= elapsed <= 150
    paused_at = runtime.cluster.now
    await asyncio.sleep(0.2)
    assert runtime.cluster.now == paused_at


@pytest.mark.parametrize(
    ("path", "body", "status", "field", "value"),
    [
        ("/time-scale", {"scale": "fast"}, 400, "scale", "fast"),
        ("/time-scale", {"scale": -1}, 400, "scale", -1),
        ("/time-scale", {}, 400, "scale", None),
        ("/advance", {"seconds": -3}, 400, "seconds", -3),
        ("/advance", {"seconds": True}, 400, "seconds", True),
        ("/produce", {"topic": "nope", "bytes_per_sec": 1}, 404, "topic", "nope"),
        ("/produce", {"topic": "t", "partition": 5, "bytes_per_sec": 1}, 400, "partition", 5),
        ("/produce", {"topic": "t", "bytes_per_sec": "x"}, 400, "bytes_per_sec", "x"),
        ("/produce", {"bytes_per_sec": 1}, 400, "topic", None),
        ("/brokers/9/stop", None, 404, "broker_id", 9),
        ("/brokers/one/start", None, 400, "broker_id", "one"),
    ],
)
async def test_errors_name_the_field_and_value(
    http: aiohttp.ClientSession, *, path: str, body: Any, status: int, field: str, value: Any
) -> None:
    got_status, got = await _call(http, "POST", path, body)
    assert got_status == status
    assert (got["field"], got["value"]) == (field, value)
    assert got["error"]


async def test_body_must_be_a_json_object(http: aiohttp.ClientSession) -> None:
    async with http.post("/advance", data="[1, 2") as response:
        assert response.status == 400
        assert (await response.json())["field"] == "(body)"


async def test_unknown_path_is_json(http: aiohttp.ClientSession) -> None:
    status, body = await _call(http, "GET", "/nope")
    assert status == 404
    assert body["path"] == "/nope"


async def test_produce_sets_the_rate(http: aiohttp.ClientSession, runtime: SimRuntime) -> None:
    status, _ = await _call(http, "POST", "/produce", {"topic": "t", "partition": 1, "bytes_per_sec": 500})
    assert status == 200
    partitions = runtime.cluster.topics["t"].partitions
    assert partitions[1].produce_bytes_per_sec == 500
    assert partitions[0].produce_bytes_per_sec == 0
    await _call(http, "POST", "/advance", {"seconds": 10})
    assert partitions[1].log_end == pytest.approx(1000 + 5000)


async def test_stop_and_start_broker_closes_and_reopens_its_port(
    http: aiohttp.ClientSession, runtime: SimRuntime
) -> None:
    port = runtime.listeners.endpoints[2].port
    assert not _refused(port)
    status, body = await _call(http, "POST", "/brokers/2/stop")
    assert (status, body) == (200, {"broker": 2, "online": False})
    assert _refused(port)
    assert not runtime.cluster.brokers[2].online
    status, body = await _call(http, "POST", "/brokers/2/start")
    assert (status, body["online"]) == (200, True)
    assert not _refused(port)
    assert runtime.listeners.endpoints[2].port == port


async def test_serve_exits_1_when_a_simulation_step_fails() -> None:
    import io

    from reassignd.sim.runner import serve

    class Broken(SimCluster):
        def advance(self, seconds: float) -> None:
            raise RuntimeError("model bug")

    broken = Broken.from_scenario(load_scenario(SCENARIO), seed=1)
    out = io.StringIO()
    assert await asyncio.wait_for(serve(broken, time_scale=1, out=out), timeout=10) == 1
    assert out.getvalue().startswith("bootstrap.servers=127.0.0.1:")


async def test_append_network_and_acks(runtime: SimRuntime, http: aiohttp.ClientSession) -> None:
    """A bulk fill, a slow broker and acks=all producers, as tests/realkafka/test_fidelity.py uses them."""
    cluster = runtime.cluster
    p = cluster.topics["t"].partitions[0]
    assert await _call(http, "POST", "/append", {"topic": "t", "partition": 0, "bytes": 500}) == (
        200,
        {"topic": "t", "partition": 0, "written": {"0": 500}},
    )
    assert p.log_end == 1500 and p.position(2) == 1500, "in-sync followers hold the bytes too"
    status, body = await _call(http, "POST", "/brokers/2/network", {"network_in_bytes_per_sec": 0})
    assert (status, body["network_in_bytes_per_sec"], body["network_out_bytes_per_sec"]) == (200, 0, 125e6)
    status, body = await _call(
        http, "POST", "/produce", {"topic": "t", "partition": 0, "bytes_per_sec": 100, "acks": "all"}
    )
    assert (status, body["acks"]) == (200, "all")
    cluster.incremental_alter_configs(2, "t", [("min.insync.replicas", 0, "2")], False)
    runtime.advance(31)  # broker 2 fetches nothing: out of the ISR after replica.lag.time.max.ms (30 s)
    assert p.isr == [1]
    end = p.log_end
    runtime.advance(5)
    assert p.log_end == end, "acks=all writes refused below min.insync.replicas"
    assert (await _call(http, "POST", "/append", {"topic": "t", "partition": 0, "bytes": 10}))[1][
        "written"
    ] == {"0": 0}
    for path, body, field in (
        ("/append", {"topic": "t", "bytes": -1}, "bytes"),
        ("/produce", {"topic": "t", "bytes_per_sec": 1, "acks": "0"}, "acks"),
        ("/brokers/2/network", {"network_in_bytes_per_sec": "fast"}, "network_in_bytes_per_sec"),
    ):
        status, error = await _call(http, "POST", path, body)
        assert (status, error["field"]) == (400, field), error


@pytest.mark.parametrize("scenario", [TWO_DIRS])
async def test_a_log_dir_fails_and_comes_back(runtime: SimRuntime, http: aiohttp.ClientSession) -> None:
    """POST /brokers/{id}/log-dirs/fail and /restore: a dir other than the metadata dir fails with its
    broker up; the last live dir halts the broker and closes its port (sim/log_dirs.py)."""
    status, body = await _call(http, "POST", "/brokers/1/log-dirs/fail", {"path": "/c"})
    assert (status, body["field"], body["value"]) == (400, "path", "/c")
    status, body = await _call(http, "POST", "/brokers/1/log-dirs/fail", {"path": "/b"})
    assert (status, body["broker_online"]) == (200, True)
    _, state = await _call(http, "GET", "/state")
    assert [d["online"] for d in state["brokers"][0]["log_dirs"]] == [True, False]
    status, body = await _call(http, "POST", "/brokers/1/log-dirs/restore", {"path": "/b"})
    assert (status, body["online"]) == (200, True)
    port = runtime.listeners.endpoints[2].port
    status, body = await _call(http, "POST", "/brokers/2/log-dirs/fail", {"path": "/var/lib/kafka/data"})
    assert (status, body["broker_online"]) == (200, False)  # its only dir: it halts
    assert _refused(port)


@pytest.mark.parametrize("scenario", [TWO_DIRS])
async def test_a_log_dir_request_that_changes_nothing_or_names_no_dir_is_refused_naming_it(
    runtime: SimRuntime, http: aiohttp.ClientSession
) -> None:
    """Failing a failed dir and restoring a live one are conflicts with the current state (409), not a
    silent 200 that says the dir changed; a missing, empty or non-string path says which it is (400)."""
    for body, message in (
        ({}, "missing field 'path'"),
        ({"path": None}, "path must be a non-empty string"),
        ({"path": ""}, "path must be a non-empty string"),
        ({"path": 5}, "path must be a non-empty string"),
    ):
        status, error = await _call(http, "POST", "/brokers/1/log-dirs/fail", body)
        assert (status, error["field"], error["value"]) == (400, "path", body.get("path"))
        assert error["error"] == message
    status, error = await _call(http, "POST", "/brokers/1/log-dirs/restore", {"path": "/b"})
    assert (status, error["field"], error["value"]) == (409, "path", "/b"), error
    assert error["error"] == "broker 1's log dir '/b' is not failed"
    status, _ = await _call(http, "POST", "/brokers/1/log-dirs/fail", {"path": "/b"})
    assert status == 200
    epochs = {p.index: p.partition_epoch for p in runtime.cluster.topics["t"].partitions}
    status, error = await _call(http, "POST", "/brokers/1/log-dirs/fail", {"path": "/b"})
    assert (status, error["field"], error["value"]) == (409, "path", "/b"), error
    assert error["error"] == "broker 1's log dir '/b' has already failed"
    assert {p.index: p.partition_epoch for p in runtime.cluster.topics["t"].partitions} == epochs
    _, state = await _call(http, "GET", "/state")
    assert [d["online"] for d in state["brokers"][0]["log_dirs"]] == [True, False]


@pytest.mark.parametrize("scenario", [TWO_DIRS])
@pytest.mark.parametrize(
    ("failed", "why"), [(["/a"], "its metadata log dir '/a'"), (["/b", "/a"], "every log dir")]
)
async def test_a_broker_whose_metadata_dir_or_every_dir_failed_does_not_start(
    failed: list[str], why: str, runtime: SimRuntime, http: aiohttp.ClientSession
) -> None:
    """Kafka does not start a broker that cannot read its metadata log dir (KRaft: KafkaRaftServer
    initializeLogDirs) or any log dir (LogManager.createAndValidateLogDirs): /start answers 409 naming the
    broker, and nothing changes until a dir is restored."""
    for path in failed:
        status, body = await _call(http, "POST", "/brokers/1/log-dirs/fail", {"path": path})
        assert status == 200, body
    assert not runtime.cluster.brokers[1].online
    port = runtime.listeners.endpoints[1].port
    status, error = await _call(http, "POST", "/brokers/1/start")
    assert (status, error["field"], error["value"]) == (409, "broker_id", 1), error
    assert error["error"] == f"broker 1 cannot start: {why} failed (restore it first)"
    assert not runtime.cluster.brokers[1].online and _refused(port)
    status, _ = await _call(http, "POST", "/brokers/1/log-dirs/restore", {"path": "/a"})
    assert status == 200
    status, body = await _call(http, "POST", "/brokers/1/start")
    assert (status, body["online"]) == (200, True)
