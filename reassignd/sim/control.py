"""The simulator's control API: JSON over HTTP on loopback, for tests, demos and rehearsals.

GET /state, GET /snapshot; POST /brokers/{id}/stop, /brokers/{id}/start, /brokers/{id}/network,
/brokers/{id}/log-dirs/fail and /brokers/{id}/log-dirs/restore (body {"path": DIR}), /produce, /append,
/time-scale, /advance.
Bad input is answered with HTTP 400 (404 for an unknown broker, 409 for a conflict with the current state)
and a JSON body naming the field and the value: {"error": ..., "field": ..., "value": ...}.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from typing import Any, Protocol

from aiohttp import web

from reassignd.model import snapshot_to_dict
from reassignd.sim import log_dirs
from reassignd.sim.errors import KafkaError
from reassignd.sim.model import SimCluster
from reassignd.sim.server import BrokerListeners


class Runtime(Protocol):
    """What the control API steers: the model, its clock's scale, the brokers' listeners (runner.py)."""

    cluster: SimCluster
    time_scale: float
    listeners: BrokerListeners

    def set_time_scale(self, scale: float) -> None: ...

    def advance(self, seconds: float) -> None: ...

    async def stop_broker(self, broker_id: int) -> None: ...

    async def start_broker(self, broker_id: int) -> None: ...


RUNTIME_KEY: web.AppKey[Runtime] = web.AppKey("runtime")


class ControlError(Exception):
    def __init__(self, status: int, message: str, field: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.status, self.message, self.field, self.value = status, message, field, value

    def response(self) -> web.Response:
        body: dict[str, Any] = {"error": self.message}
        if self.field is not None:
            body["field"] = self.field
            body["value"] = self.value
        return web.json_response(body, status=self.status)


@web.middleware
async def _errors(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except ControlError as exc:
        return exc.response()
    except KafkaError as exc:
        return ControlError(400, exc.message or exc.name, "kafka_error", exc.name).response()
    except web.HTTPException as exc:  # unknown path or method: JSON too
        return web.json_response({"error": exc.reason, "path": request.path}, status=exc.status)


async def _json_body(request: web.Request) -> dict[str, Any]:
    text = await request.text()
    if not text.strip():
        return {}
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ControlError(400, f"request body is not JSON: {exc.msg}", "(body)", text[:200]) from None
    if not isinstance(body, dict):
        raise ControlError(400, "request body must be a JSON object", "(body)", body)
    return body


def _number(body: dict[str, Any], field: str, minimum: float = 0.0, required: bool = True) -> float | None:
    if field not in body:
        if required:
            raise ControlError(400, f"missing field {field!r}", field, None)
        return None
    value = body[field]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ControlError(400, f"{field} must be a finite number", field, value)
    if value < minimum:
        raise ControlError(400, f"{field} must be >= {minimum:g}", field, value)
    return float(value)


def _broker_id(request: web.Request) -> int:
    raw = request.match_info["broker_id"]
    try:
        broker_id = int(raw)
    except ValueError:
        raise ControlError(400, "broker id must be an integer", "broker_id", raw) from None
    if broker_id not in request.app[RUNTIME_KEY].cluster.brokers:
        raise ControlError(404, f"no broker {broker_id}", "broker_id", broker_id)
    return broker_id


async def get_state(request: web.Request) -> web.Response:
    runtime = request.app[RUNTIME_KEY]
    state = dict(runtime.cluster.state_dict())
    state["time_scale"] = runtime.time_scale
    state["listeners"] = {str(e.broker_id): e.port for e in runtime.listeners.endpoints.values()}
    return web.json_response(state)


async def get_snapshot(request: web.Request) -> web.Response:
    """The cluster now, stamped with the wall-clock instant it was read (`read_at`): how old its sizes are
    is what a planner or a rehearsal reading it later must say."""
    snapshot = replace(request.app[RUNTIME_KEY].cluster.to_snapshot(), read_at=time.time())
    return web.json_response(snapshot_to_dict(snapshot))


async def get_requests(request: web.Request) -> web.Response:
    """The request log of writes (CreateTopics, IncrementalAlterConfigs, AlterPartitionReassignments, ...)."""
    return web.json_response({"requests": list(request.app[RUNTIME_KEY].listeners.request_log)})


async def stop_broker(request: web.Request) -> web.Response:
    broker_id = _broker_id(request)
    await request.app[RUNTIME_KEY].stop_broker(broker_id)
    return web.json_response({"broker": broker_id, "online": False})


async def start_broker(request: web.Request) -> web.Response:
    broker_id = _broker_id(request)
    cluster = request.app[RUNTIME_KEY].cluster
    broker = cluster.brokers[broker_id]
    why = None if broker.online else log_dirs.why_not_started(broker, cluster.kafka)
    if why is not None:
        message = f"broker {broker_id} cannot start: {why} failed (restore it first)"
        raise ControlError(409, message, "broker_id", broker_id)
    try:
        await request.app[RUNTIME_KEY].start_broker(broker_id)
    except OSError as exc:  # its port was taken while it was down
        message = f"cannot listen again: {exc.strerror or exc}"
        raise ControlError(409, message, "broker_id", broker_id) from None
    return web.json_response({"broker": broker_id, "online": True})


async def _log_dir(request: web.Request, online: bool) -> tuple[int, str]:
    """The broker and the dir the body names, which must be `online` now (live to fail, failed to
    restore): anything else is refused before the model changes."""
    broker_id = _broker_id(request)
    body = await _json_body(request)
    if "path" not in body:
        raise ControlError(400, "missing field 'path'", "path", None)
    path = body["path"]
    if not isinstance(path, str) or not path:
        raise ControlError(400, "path must be a non-empty string", "path", path)
    broker = request.app[RUNTIME_KEY].cluster.brokers[broker_id]
    log_dir = broker.dir_named(path)
    if log_dir is None:
        known = [d.path for d in broker.log_dirs]
        raise ControlError(400, f"path must be one of broker {broker_id}'s log dirs {known}", "path", path)
    if log_dir.online != online:
        state = "has already failed" if online else "is not failed"
        raise ControlError(409, f"broker {broker_id}'s log dir {path!r} {state}", "path", path)
    return broker_id, path


async def fail_log_dir(request: web.Request) -> web.Response:
    """A log dir fails (a disk error): sim/log_dirs.py has what Kafka does then."""
    broker_id, path = await _log_dir(request, online=True)
    cluster = request.app[RUNTIME_KEY].cluster
    cluster.fail_log_dir(broker_id, path)
    if not cluster.brokers[broker_id].online:  # it halted (its last live dir, or its metadata dir)
        await request.app[RUNTIME_KEY].listeners.close(broker_id)
    return web.json_response(
        {
            "broker": broker_id,
            "path": path,
            "online": False,
            "broker_online": cluster.brokers[broker_id].online,
        }
    )


async def restore_log_dir(request: web.Request) -> web.Response:
    broker_id, path = await _log_dir(request, online=False)
    request.app[RUNTIME_KEY].cluster.restore_log_dir(broker_id, path)
    return web.json_response({"broker": broker_id, "path": path, "online": True})


def _topic_partition(runtime: Runtime, body: dict[str, Any]) -> tuple[str, int | None]:
    topic = body.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ControlError(400, "topic must be a non-empty string", "topic", topic)
    if topic not in runtime.cluster.topics:
        raise ControlError(404, f"no topic {topic!r}", "topic", topic)
    partition = body.get("partition")
    if partition is not None:
        count = len(runtime.cluster.topics[topic].partitions)
        if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition < count:
            raise ControlError(400, f"partition must be an integer in [0, {count})", "partition", partition)
    return topic, partition


async def produce(request: web.Request) -> web.Response:
    runtime = request.app[RUNTIME_KEY]
    body = await _json_body(request)
    topic, partition = _topic_partition(runtime, body)
    rate = _number(body, "bytes_per_sec")
    assert rate is not None
    acks = body.get("acks")
    if acks not in (None, "all", "1"):
        raise ControlError(400, 'acks must be "all" or "1"', "acks", acks)
    runtime.cluster.set_produce_rate(topic, partition, rate, acks)
    return web.json_response({"topic": topic, "partition": partition, "bytes_per_sec": rate, "acks": acks})


async def append(request: web.Request) -> web.Response:
    """Bytes written at once to a partition (all of the topic's when none is named): a bulk fill."""
    runtime = request.app[RUNTIME_KEY]
    body = await _json_body(request)
    topic, partition = _topic_partition(runtime, body)
    size = _number(body, "bytes")
    assert size is not None
    written = runtime.cluster.append(topic, partition, size)
    return web.json_response({"topic": topic, "partition": partition, "written": written})


async def set_network(request: web.Request) -> web.Response:
    """A broker's network capacity each way, changed at runtime: a slow follower as a test wants one."""
    broker_id = _broker_id(request)
    body = await _json_body(request)
    inbound = _number(body, "network_in_bytes_per_sec", required=False)
    outbound = _number(body, "network_out_bytes_per_sec", required=False)
    cluster = request.app[RUNTIME_KEY].cluster
    cluster.set_network(broker_id, inbound, outbound)
    broker = cluster.brokers[broker_id]
    return web.json_response(
        {
            "broker": broker_id,
            "network_in_bytes_per_sec": broker.network_in,
            "network_out_bytes_per_sec": broker.network_out,
        }
    )


async def set_time_scale(request: web.Request) -> web.Response:
    runtime = request.app[RUNTIME_KEY]
    scale = _number(await _json_body(request), "scale")
    assert scale is not None
    runtime.set_time_scale(scale)
    return web.json_response({"time_scale": runtime.time_scale, "now": runtime.cluster.now})


async def advance(request: web.Request) -> web.Response:
    runtime = request.app[RUNTIME_KEY]
    seconds = _number(await _json_body(request), "seconds")
    assert seconds is not None
    if runtime.time_scale != 0:
        raise ControlError(
            409,
            'advance only while paused: POST /time-scale {"scale": 0} first',
            "time_scale",
            runtime.time_scale,
        )
    runtime.advance(seconds)
    return web.json_response({"now": runtime.cluster.now})


def build_app(runtime: Runtime) -> web.Application:
    app = web.Application(middlewares=[_errors])
    app[RUNTIME_KEY] = runtime
    app.router.add_get("/state", get_state)
    app.router.add_get("/snapshot", get_snapshot)
    app.router.add_get("/requests", get_requests)
    app.router.add_post("/brokers/{broker_id}/stop", stop_broker)
    app.router.add_post("/brokers/{broker_id}/start", start_broker)
    app.router.add_post("/brokers/{broker_id}/network", set_network)
    app.router.add_post("/brokers/{broker_id}/log-dirs/fail", fail_log_dir)
    app.router.add_post("/brokers/{broker_id}/log-dirs/restore", restore_log_dir)
    app.router.add_post("/produce", produce)
    app.router.add_post("/append", append)
    app.router.add_post("/time-scale", set_time_scale)
    app.router.add_post("/advance", advance)
    return app
