"""The simulator process: the model, one Kafka listener per broker, the control API and the clock.

`SimRuntime` is usable in-process (tests, the daemon's embedded demo); `run_simulator` is the
`reassignd sim` entry point: it prints the two ready lines and runs until SIGTERM/SIGINT. The model is
synchronous and every request handler runs on the one event loop, so the model needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from typing import Any, TextIO

import structlog
from aiohttp import web

from reassignd.sim import protocol_admin, protocol_configs, protocol_groups, protocol_metadata
from reassignd.sim.control import build_app
from reassignd.sim.groups import GroupCoordinator
from reassignd.sim.kafka_version import DEFAULT as DEFAULT_KAFKA
from reassignd.sim.kafka_version import KafkaVersion
from reassignd.sim.protocol import KafkaProtocol
from reassignd.sim.server import BrokerListeners

log = structlog.get_logger(__name__)

CLOCK_STEP_SECONDS = 0.05  # wall time between clock steps


def kafka_protocol(kafka: KafkaVersion = DEFAULT_KAFKA) -> KafkaProtocol:
    """The APIs and versions a broker of this Kafka release serves; groups are timed on the wall clock."""
    specs = protocol_metadata.specs() + protocol_configs.specs() + protocol_admin.specs()
    specs += protocol_groups.specs()
    return KafkaProtocol(specs, kafka.api_versions, groups=GroupCoordinator(time.monotonic))


class SimRuntime:
    """Serves one SimCluster over the Kafka protocol and HTTP, advancing it with wall time x time scale."""

    def __init__(self, cluster: Any, time_scale: float = 1.0, host: str = "127.0.0.1") -> None:
        if time_scale < 0:
            raise ValueError(f"time_scale must be >= 0, got {time_scale}")
        self.cluster = cluster
        self.host = host
        self.time_scale = float(time_scale)
        cluster.time_scale = self.time_scale  # answered to clients with the clock (views.clock_entries)
        self.listeners = BrokerListeners(
            kafka_protocol(getattr(cluster, "kafka", DEFAULT_KAFKA)), cluster, host
        )
        self._control: web.AppRunner | None = None
        self._clock: asyncio.Task[None] | None = None
        self.control_port = 0

    @property
    def bootstrap_servers(self) -> str:
        return self.listeners.bootstrap_servers()

    @property
    def control_url(self) -> str:
        return f"http://{self.host}:{self.control_port}"

    async def start(self, control_port: int = 0) -> None:
        await self.listeners.start(self.cluster.brokers)
        self._control = web.AppRunner(build_app(self), access_log=None)
        await self._control.setup()
        site = web.TCPSite(self._control, self.host, control_port)
        await site.start()
        self.control_port = int(self._control.addresses[0][1])
        self._clock = asyncio.create_task(self._run_clock(), name="sim-clock")

    async def stop(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # a failed step is already logged
                await self._clock
            self._clock = None
        await self.listeners.close_all()
        if self._control is not None:
            await self._control.cleanup()
            self._control = None

    async def stop_broker(self, broker_id: int) -> None:
        self.cluster.stop_broker(broker_id)
        await self.listeners.close(broker_id)
        log.info("broker stopped", broker=broker_id, controller=self.cluster.controller_id)

    async def start_broker(self, broker_id: int) -> None:
        await self.listeners.open(broker_id)  # first: if the port is gone, the model stays unchanged
        self.cluster.start_broker(broker_id)
        log.info("broker started", broker=broker_id, port=self.listeners.endpoints[broker_id].port)

    @property
    def clock_task(self) -> asyncio.Task[None] | None:
        """The clock; it only ends by itself if a simulation step raised."""
        return self._clock

    def set_time_scale(self, scale: float) -> None:
        if scale < 0:
            raise ValueError(f"time scale must be >= 0, got {scale}")
        self.time_scale = float(scale)
        self.cluster.time_scale = self.time_scale

    def advance(self, seconds: float) -> None:
        self.cluster.advance(seconds)

    async def _run_clock(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(CLOCK_STEP_SECONDS)
            now = loop.time()
            elapsed, last = now - last, now
            if self.time_scale > 0:
                try:
                    self.cluster.advance(elapsed * self.time_scale)
                except Exception:
                    log.exception("simulation step failed; clock stopped")
                    raise


async def serve(cluster: Any, time_scale: float, out: TextIO) -> int:
    """Run until SIGTERM or SIGINT; the handlers only set an event, shutdown happens here."""
    runtime = SimRuntime(cluster, time_scale)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await runtime.start()
        out.write(f"bootstrap.servers={runtime.bootstrap_servers}\n")
        out.write(f"control={runtime.control_url}\n")
        out.flush()
        log.info(
            "simulator ready",
            brokers=len(cluster.brokers),
            topics=len(cluster.topics),
            bootstrap_servers=runtime.bootstrap_servers,
            control=runtime.control_url,
            time_scale=time_scale,
        )
        waiter = asyncio.create_task(stop.wait())
        watched: set[asyncio.Task[Any]] = {waiter}
        if runtime.clock_task is not None:
            watched.add(runtime.clock_task)
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():  # the clock died: the simulation cannot go on
            waiter.cancel()
            return 1
        log.info("simulator stopping")
        return 0
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await runtime.stop()


def run_simulator(cluster: Any, time_scale: float = 1.0, out: TextIO | None = None) -> int:
    return asyncio.run(serve(cluster, time_scale, out or sys.stdout))
