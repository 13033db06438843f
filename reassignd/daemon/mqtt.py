"""Events, status and commands over MQTT (aiomqtt).

Topics (`<prefix>/<cluster>/...`):
  events            every controller event as JSON, QoS 1, in order (a per-daemon `seq` lets consumers
                    spot a gap or a duplicate: delivery is at least once across reconnects);
  status            the leader's plan status document (`plan_status()`), retained, QoS 1, published when it
                    changes but at most once per `mqtt.status.min.interval.seconds`;
  daemons/<node>    this daemon's presence, retained: `online: true` on connect, and the broker publishes
                    the last will (`online: false`) when the connection dies without a clean goodbye;
  commands          signed commands (see mqtt_auth), subscribed QoS 1; only the leader acts on them.

The controller never waits for MQTT: `sink` appends to a bounded deque and returns. While the broker is
unreachable events wait there; when it is full the oldest is dropped and counted
(`reassignd_mqtt_dropped_events_total`). A lost connection (aiomqtt.MqttError) is retried with exponential
backoff and jitter; any other exception is a bug and ends `run()`, so the daemon's supervisor sees it and
the process exits (systemd restarts it) instead of reconnecting forever around it. A command that cannot
be verified, whatever is wrong with its payload, is answered with a `command.rejected` event.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import random
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiomqtt

from reassignd import config_keys
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.mqtt_auth import NONCE_FILE, Command, CommandRejected, CommandVerifier
from reassignd.daemon.service import ServiceError
from reassignd.logs import get_logger
from reassignd.store.actor import acting_as

log = get_logger("reassignd.mqtt")

BACKOFF_FIRST = 0.5
BACKOFF_MAX = 30.0


class CommandTarget(Protocol):
    @property
    def is_leader(self) -> bool: ...

    async def pause(self, plan_id: str | None = None) -> Any: ...
    async def resume(self, plan_id: str | None = None) -> Any: ...
    async def cancel(self, plan_id: str | None = None) -> Any: ...
    async def set_throttles(self, changes: Mapping[str, Any]) -> Any: ...
    async def retarget(self, plan_id: str | None = None) -> Any: ...
    async def decommission(self, broker: Any, request: Mapping[str, Any]) -> Any: ...
    async def recommission(self, broker: Any) -> Any: ...
    async def approve_anomaly(self, anomaly_id: str) -> Any: ...
    def plan_status(self, plan_id: str | None = None) -> Any: ...
    def list_plans(self) -> list[Any]: ...


@dataclass(frozen=True)
class MqttSettings:
    host: str
    port: int
    prefix: str
    cluster: str
    node_id: str
    client_id: str
    keepalive: int
    queue_max: int
    status_min_interval: float
    username: str | None = None
    password: str | None = None
    tls: bool = False
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    def topic(self, leaf: str) -> str:
        return f"{self.prefix}/{self.cluster}/{leaf}"

    @classmethod
    def from_config(cls, config: Any, cluster: str, node_id: str) -> MqttSettings:
        def opt(key: str) -> str | None:
            value = config[key]
            return None if value in (None, "") else str(value)

        return cls(
            host=str(config[config_keys.MQTT_HOST]),
            port=int(config[config_keys.MQTT_PORT]),
            prefix=str(config[config_keys.MQTT_TOPIC_PREFIX]).strip("/"),
            cluster=cluster,
            node_id=node_id,
            client_id=opt(config_keys.MQTT_CLIENT_ID) or f"reassignd-{cluster}-{node_id}"[:128],
            keepalive=int(config[config_keys.MQTT_KEEPALIVE_SECONDS]),
            queue_max=int(config[config_keys.MQTT_QUEUE_MAX_EVENTS]),
            status_min_interval=float(config[config_keys.MQTT_STATUS_MIN_INTERVAL_SECONDS]),
            username=opt(config_keys.MQTT_USERNAME),
            password=config.secret(config_keys.MQTT_PASSWORD),
            tls=bool(config[config_keys.MQTT_TLS_ENABLE]),
            ca_file=opt(config_keys.MQTT_TLS_CA_FILE),
            cert_file=opt(config_keys.MQTT_TLS_CERTIFICATE_FILE),
            key_file=opt(config_keys.MQTT_TLS_KEY_FILE),
        )


class EventQueue:
    """The events the daemon emits, waiting for the broker: bounded (the oldest go first when it is full,
    counted), numbered, never blocking the emitter. Made before the controller that emits into it."""

    def __init__(
        self, size: int, node_id: str, metrics: DaemonMetrics, clock: Callable[[], float] = time.time
    ) -> None:
        self.size = size
        self.node_id = node_id
        self.metrics = metrics
        self.clock = clock
        self.queue: collections.deque[dict[str, Any]] = collections.deque()
        self.dropped = 0
        self.pending = asyncio.Event()
        self._seq = 0
        self._step_started: dict[tuple[Any, ...], float] = {}

    @classmethod
    def from_config(cls, config: Any, node_id: str, metrics: DaemonMetrics) -> EventQueue:
        return cls(int(config[config_keys.MQTT_QUEUE_MAX_EVENTS]), node_id, metrics)

    def sink(self, event: Mapping[str, Any]) -> None:
        event = self._with_duration(event)
        self._seq += 1
        if len(self.queue) >= self.size:
            self.queue.popleft()
            self.dropped += 1
            self.metrics.mqtt_dropped()
        self.queue.append({**event, "seq": self._seq, "node": self.node_id})
        self.pending.set()

    def _with_duration(self, event: Mapping[str, Any]) -> Mapping[str, Any]:
        """step.finished gets `seconds` from its step.started (null when that began before a restart)."""
        kind = event.get("event")
        if kind not in ("step.started", "step.finished"):
            return event
        key = (event.get("plan_id"), event.get("topic"), event.get("partition"), event.get("step"))
        if kind == "step.started":
            self._step_started[key] = float(event.get("at") or self.clock())
            return event
        started = self._step_started.pop(key, None)
        if "seconds" in event:
            return event
        at = float(event.get("at") or self.clock())
        return {**event, "seconds": None if started is None else round(at - started, 3)}


class MqttBridge:
    def __init__(
        self,
        settings: MqttSettings,
        target: CommandTarget,
        verifier: CommandVerifier,
        metrics: DaemonMetrics,
        *,
        clock: Callable[[], float] = time.time,
        events: EventQueue | None = None,
    ) -> None:
        self.settings = settings
        self.target = target
        self.verifier = verifier
        self.metrics = metrics
        self.clock = clock
        self.events = events or EventQueue(settings.queue_max, settings.node_id, metrics, clock)
        self.connected = False
        self._last_status: bytes | None = None
        self._tls = self._tls_context()

    def reload(self, config: Any) -> None:
        """SIGHUP: the reloadable MQTT keys (the rest need a restart)."""
        self.verifier.window_seconds = float(config[config_keys.MQTT_COMMAND_REPLAY_WINDOW_SECONDS])
        self.settings = dataclasses.replace(
            self.settings, status_min_interval=float(config[config_keys.MQTT_STATUS_MIN_INTERVAL_SECONDS])
        )

    # ---------------------------------------------------------------------------------------------------
    # the controller's side: never blocks

    def sink(self, event: Mapping[str, Any]) -> None:
        self.events.sink(event)

    @property
    def queue(self) -> collections.deque[dict[str, Any]]:
        return self.events.queue

    @property
    def dropped(self) -> int:
        return self.events.dropped

    # ---------------------------------------------------------------------------------------------------
    # the connection

    def _presence(self, online: bool) -> bytes:
        return json.dumps(
            {
                "node": self.settings.node_id,
                "online": online,
                "leader": self.target.is_leader,
                "at": self.clock(),
            }
        ).encode()

    def _tls_context(self) -> ssl.SSLContext | None:
        """Built once at start-up: a missing or bad certificate file stops the daemon with a clear error."""
        s = self.settings
        if not s.tls:
            return None
        context = ssl.create_default_context(cafile=s.ca_file)
        if s.cert_file:
            context.load_cert_chain(s.cert_file, s.key_file)
        return context

    def _client(self) -> aiomqtt.Client:
        s = self.settings
        will = aiomqtt.Will(s.topic(f"daemons/{s.node_id}"), self._presence(False), qos=1, retain=True)
        return aiomqtt.Client(
            s.host,
            s.port,
            username=s.username,
            password=s.password,
            identifier=s.client_id,
            keepalive=s.keepalive,
            will=will,
            tls_context=self._tls,
            timeout=10,
        )

    async def run(self) -> None:
        """Connects, serves, and reconnects with backoff after a lost connection; cancellation or a bug (any
        exception but aiomqtt.MqttError) ends it, the bug reaching the supervisor."""
        backoff = BACKOFF_FIRST
        while True:
            try:
                async with self._client() as client:
                    self.connected = True
                    backoff = BACKOFF_FIRST
                    log.info("connected to the MQTT broker", host=self.settings.host, port=self.settings.port)
                    await self._serve(client)
            except aiomqtt.MqttError as exc:
                log.warning("MQTT connection lost; retrying", error=str(exc), retry_in=round(backoff, 2))
            except Exception as exc:
                log.error("MQTT bridge failed", error=repr(exc), exc_info=True)
                raise
            finally:
                self.connected = False
            await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
            backoff = min(BACKOFF_MAX, backoff * 2)

    async def _serve(self, client: aiomqtt.Client) -> None:
        s = self.settings
        await client.publish(s.topic(f"daemons/{s.node_id}"), self._presence(True), qos=1, retain=True)
        await client.subscribe(s.topic("commands"), qos=1)
        self._last_status = None  # republish: the broker may have lost the retained copy
        tasks = [
            asyncio.create_task(self._publish_events(client)),
            asyncio.create_task(self._publish_status(client)),
            asyncio.create_task(self._read_commands(client)),
        ]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(aiomqtt.MqttError):  # a clean goodbye: no last will
            await client.publish(s.topic(f"daemons/{s.node_id}"), self._presence(False), qos=1, retain=True)

    async def _publish_events(self, client: aiomqtt.Client) -> None:
        """In order, one at a time: the head leaves the queue only once the broker acknowledged it."""
        topic = self.settings.topic("events")
        while True:
            while self.queue:
                event = self.queue[0]
                await client.publish(topic, json.dumps(event, default=str).encode(), qos=1)
                if self.queue and self.queue[0] is event:
                    self.queue.popleft()
                if event.get("event") == "leadership.changed":  # keep the presence's role current
                    presence = self.settings.topic(f"daemons/{self.settings.node_id}")
                    await client.publish(presence, self._presence(True), qos=1, retain=True)
            self.events.pending.clear()
            if not self.queue:
                await self.events.pending.wait()

    async def _publish_status(self, client: aiomqtt.Client) -> None:
        """The leader's status document, retained; checked every min interval, sent only when it changed."""
        topic = self.settings.topic("status")
        while True:
            if self.target.is_leader:
                document = self.status_document()
                comparable = json.dumps(document, default=str, sort_keys=True).encode()
                if comparable != self._last_status:
                    payload = {**document, "node": self.settings.node_id, "published_at": self.clock()}
                    await client.publish(topic, json.dumps(payload, default=str).encode(), qos=1, retain=True)
                    self._last_status = comparable
            await asyncio.sleep(max(0.2, self.settings.status_min_interval))

    def status_document(self) -> Any:
        """The active plan's status; with none active, the latest plan's (its final state)."""
        try:
            return self.target.plan_status()
        except ServiceError:
            pass
        plans = self.target.list_plans()
        if not plans:
            return {"state": "idle", "plan_id": None}
        return self.target.plan_status(str(plans[0]["plan_id"]))

    async def _read_commands(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            payload = message.payload if isinstance(message.payload, bytes) else str(message.payload).encode()
            await self.handle_command(payload)

    async def handle_command(self, payload: bytes) -> None:
        if not self.target.is_leader:
            return  # the leader answers; standbys stay silent so each command is judged once
        try:
            command = self.verifier.verify(payload)
        except CommandRejected as exc:
            self.metrics.command_rejected("mqtt", exc.reason)
            log.warning("MQTT command rejected", reason=exc.reason, detail=exc.detail)
            self.sink(
                {"event": "command.rejected", "at": self.clock(), "reason": exc.reason, "detail": exc.detail}
            )
            return
        try:
            with acting_as({"via": "mqtt", "command": command.name, "nonce": command.nonce}):
                await self._execute(command)
        except Exception as exc:
            code, message = (
                (exc.code, exc.message) if isinstance(exc, ServiceError) else ("internal", repr(exc))
            )
            self.metrics.command_rejected("mqtt", code)
            log.warning("MQTT command refused", command=command.name, error=f"{code}: {message}")
            self.sink(
                {
                    "event": "command.failed",
                    "at": self.clock(),
                    "command": command.name,
                    "nonce": command.nonce,
                    "code": code,
                    "message": message,
                }
            )
            return
        log.info("MQTT command executed", command=command.name, plan=command.plan_id)
        self.sink(
            {"event": "command.accepted", "at": self.clock(), "command": command.name, "nonce": command.nonce}
        )

    async def _execute(self, command: Command) -> None:
        actions: dict[str, Callable[[], Awaitable[Any]]] = {
            "pause": lambda: self.target.pause(command.plan_id),
            "resume": lambda: self.target.resume(command.plan_id),
            "cancel": lambda: self.target.cancel(command.plan_id),
            "set_throttles": lambda: self.target.set_throttles(command.throttles),
            "retarget": lambda: self.target.retarget(command.plan_id),
            "decommission": lambda: self.target.decommission(command.broker, command.options),
            "recommission": lambda: self.target.recommission(command.broker),
            "approve_anomaly": lambda: self.target.approve_anomaly(str(command.anomaly)),
        }
        await actions[command.name]()


def build_bridge(
    config: Any, controller: CommandTarget, metrics: DaemonMetrics, cluster: str, events: EventQueue
) -> MqttBridge:
    secret = config.secret(config_keys.MQTT_COMMAND_HMAC_SECRET)
    verifier = CommandVerifier(
        secret.encode() if secret else None,
        float(config[config_keys.MQTT_COMMAND_REPLAY_WINDOW_SECONDS]),
        nonce_file=Path(str(config[config_keys.STATE_DIR])) / NONCE_FILE,
    )
    if not secret:
        log.warning("mqtt.command.hmac.secret is not set: every MQTT command will be rejected")
    settings = MqttSettings.from_config(config, cluster, events.node_id)
    return MqttBridge(settings, controller, verifier, metrics, events=events)
