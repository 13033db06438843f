"""`reassignd run`: builds the daemon from its config and runs it until a signal stops it.

Everything long-running sits under one Supervisor: the controller's fixed-rate loop, the API server and
the signal watchers. SIGHUP reloads the config (validated first; the old one stays on error), SIGTERM or
SIGINT stops gracefully within `controller.shutdown.timeout.seconds` — the current cycle finishes, state is
persisted, in-flight moves are left to Kafka — and a second signal forces the exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reassignd import logs
from reassignd.cluster.errors import KafkaErrorInfo
from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.config import Config
from reassignd.config.reload import reload_config
from reassignd.daemon.api import ACCESS_KEY, create_app, load_openapi, parse_listen, start_api
from reassignd.daemon.collector import Pacer, tune_collector
from reassignd.daemon.controller import AutoThrottle, Controller
from reassignd.daemon.ha import cluster_label, node_name, open_ha_store, refresh_while_standby
from reassignd.daemon.http_limits import ServerLimits
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.mqtt import build_bridge
from reassignd.daemon.proposals import start_proposals
from reassignd.daemon.runtime import FixedRateLoop, SignalFlags, Supervisor
from reassignd.daemon.settings import FileSettings
from reassignd.daemon.systemd import SystemdNotifier
from reassignd.store.actor import acting_as
from reassignd.store.aio import AsyncStore
from reassignd.store.base import StoreError
from reassignd.store.sqlite import SqliteStore

log = logs.get_logger("reassignd.daemon")


def auto_throttle_from(config: Config) -> AutoThrottle | None:
    if not config["auto.throttle.enable"]:
        return None
    return AutoThrottle(
        step=int(config["auto.throttle.step.bytes.per.second"]),
        ceiling=int(config["auto.throttle.max.bytes.per.second"]),
    )


def file_settings_from(config: Config) -> FileSettings:
    """The config file's limits and auto-throttle: what runtime changes override (daemon/settings.py)."""
    return FileSettings(
        config.limits(),
        auto_throttle_from(config),
        int(config["auto.throttle.step.bytes.per.second"]),
        int(config["auto.throttle.max.bytes.per.second"]),
    )


async def prune_history(controller: Controller, config: Callable[[], Config], interval: float = 60.0) -> None:
    """Retention: ended plans beyond `store.retention.plans` or older than `store.retention.days` go, a
    few at a time, off the cycle path; only the leader prunes (the store fences it like a commit)."""
    while True:
        await asyncio.sleep(interval)
        if not controller.is_leader:
            continue
        days, keep = float(config()["store.retention.days"]), int(config()["store.retention.plans"])
        try:
            pruned = await controller.store.prune(controller.clock() - days * 86400, keep, limit=5)
        except StoreError as exc:
            log.warning("pruning the store's history failed; retried later", error=str(exc))
            continue
        if pruned.plans or pruned.journal_entries:
            log.info("history pruned", plans=list(pruned.plans), journal_entries=pruned.journal_entries)
            await controller.start()


class MetricsObserver:
    """The cluster adapter's observer hook, feeding the daemon's metrics."""

    def __init__(self, metrics: DaemonMetrics) -> None:
        self.metrics = metrics

    def call_failed(self, api: str, error: KafkaErrorInfo) -> None:
        self.metrics.cluster_call(api, ok=False)

    def call_succeeded(self, api: str, wall_time: float) -> None:
        self.metrics.cluster_call(api, ok=True, at=wall_time)


@dataclass
class Daemon:
    config: Config
    overrides: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    metrics: DaemonMetrics = field(default_factory=DaemonMetrics)
    api_address: tuple[str, int] | None = None

    async def run(self) -> int:
        tune_collector()
        config = self.config
        state_dir = Path(str(config["state.dir"]))
        cluster = KafkaClusterAdmin(AdminSettings.from_config(config), MetricsObserver(self.metrics))
        proposals = await start_proposals(config, cluster)  # first: its JVM starts while nothing else runs
        ha_parts = await open_ha_store(config, cluster) if config["state.store"] == "zookeeper" else None
        if ha_parts is None:
            await asyncio.to_thread(state_dir.mkdir, parents=True, exist_ok=True)
            store = AsyncStore(await asyncio.to_thread(SqliteStore, state_dir))
        else:
            store = AsyncStore(ha_parts.store)
        if ha_parts is not None:
            self.metrics.cluster = ha_parts.cluster
        elif config["cluster.id"]:
            self.metrics.cluster = str(config["cluster.id"])
        controller = Controller(
            cluster,
            store,
            config.limits(),
            metrics=self.metrics,
            allow_rf_change=bool(config["reassignment.allow.replication.factor.change"]),
            auto_throttle=auto_throttle_from(config),
            file_settings=file_settings_from(config),
        )
        bridge = None
        if config["mqtt.enable"]:
            label = ha_parts.cluster if ha_parts else await cluster_label(config, cluster)
            bridge = build_bridge(config, controller, self.metrics, label, node_name(config))
            controller.events = bridge.sink
        if ha_parts is not None and ha_parts.coordinator is not None:
            controller.guard = ha_parts.coordinator.guard
            cluster.write_fence = ha_parts.coordinator.write_fence
            await controller.leadership_changed(False, None)  # a standby until elected
        else:
            self.metrics.set_leader(True)
        await controller.start()
        notifier = SystemdNotifier(self.env)
        last_cycle_ok = [asyncio.get_running_loop().time()]

        def on_cycle(status: str | None, seconds: float, error: BaseException | None) -> None:
            if error is None:
                last_cycle_ok[0] = asyncio.get_running_loop().time()
                notifier.status(status or "")

        pacer = Pacer()
        loop = FixedRateLoop(
            pacer.paced(controller.cycle),
            float(config["controller.cycle.interval.seconds"]),
            min_interval=float(config["controller.cycle.min.interval.seconds"]),
            on_result=on_cycle,
            backoff_max=float(config["controller.error.backoff.max.seconds"]),
        )
        controller.wake = loop.wake
        flags = SignalFlags()
        flags.install(asyncio.get_running_loop())

        async def metrics_handler(request: Any) -> Any:
            from aiohttp import web

            body, content_type = self.metrics.exposition(request.headers.get("Accept"))
            response = web.Response(body=body)
            response.headers["Content-Type"] = content_type
            return response

        server_limits = ServerLimits.from_config(config)
        app = create_app(
            controller,
            token=config.secret("api.token"),
            read_token=config.secret("api.read.token"),
            reads_open=bool(config["api.read.open"]),
            metrics_handler=metrics_handler,
            openapi=load_openapi(),
            on_refused=lambda code: self.metrics.command_rejected("api", code),
            max_body_bytes=server_limits.max_body_bytes,
            body_timeout=server_limits.body_timeout,
            proposals=proposals,
        )
        host, port = parse_listen(str(config["api.listen"]))
        runner = await start_api(app, host, port, limits=server_limits)
        bound = [a for a in runner.addresses if isinstance(a, tuple)]
        self.api_address = (str(bound[0][0]), int(bound[0][1])) if bound else (host, port)
        log.info(
            "reassignd running",
            api=f"http://{self.api_address[0]}:{self.api_address[1]}",
            state_dir=str(state_dir),
        )
        notifier.ready(f"serving on {self.api_address[0]}:{self.api_address[1]}")
        if config.ignored_env:
            log.warning("unknown REASSIGND_* variables ignored", variables=list(config.ignored_env))

        async def feed_watchdog() -> None:
            """WATCHDOG=1 while the controller loop is alive: a hung loop stops the pings."""
            assert notifier.watchdog_seconds is not None
            period = notifier.watchdog_seconds / 2
            stale_after = max(notifier.watchdog_seconds, 3 * loop.interval)
            while True:
                if asyncio.get_running_loop().time() - last_cycle_ok[0] < stale_after:
                    notifier.watchdog()
                await asyncio.sleep(period)

        async def watch_reload() -> None:
            while True:
                await flags.reload.wait()
                flags.reload.clear()
                notifier.reloading()
                result = reload_config(self.config, env=self.env, overrides=self.overrides)
                self.metrics.config_reloaded(result.ok)
                if not result.ok:
                    log.error(
                        "config reload rejected; keeping the running config",
                        problems=[str(p) for p in result.problems],
                    )
                    notifier.ready("config reload rejected; running config kept")  # ends RELOADING=1
                    continue
                before, after = self.config.redacted(), result.config.redacted()
                self.config = result.config
                access = app[ACCESS_KEY]
                access.operator = result.config.secret("api.token")
                access.reader = result.config.secret("api.read.token")
                access.reads_open = bool(result.config["api.read.open"])
                with acting_as({"via": "sighup"}):  # what the reload changes is journaled as by SIGHUP
                    await controller.config_reloaded(file_settings_from(result.config))
                loop.backoff_max = float(result.config["controller.error.backoff.max.seconds"])
                loop.interval = float(result.config["controller.cycle.interval.seconds"])
                loop.min_interval = float(result.config["controller.cycle.min.interval.seconds"])
                if bridge is not None:
                    bridge.reload(result.config)
                log.info(
                    "config reloaded"
                    if result.changed
                    else "config reloaded: only keys that need a restart changed"
                    if result.restart_required
                    else "config reloaded: nothing changed",
                    changes={k: f"{before.get(k)!r} -> {after.get(k)!r}" for k in sorted(result.changed)},
                    restart_required={
                        k: f"{old!r} -> {new!r} after a restart" for k, (old, new) in result.pending.items()
                    },
                )
                notifier.ready("config reloaded")  # systemd waits for READY=1 after RELOADING=1
                loop.wake()

        supervisor = Supervisor()
        supervisor.add("controller", loop.run())
        if ha_parts is not None and ha_parts.coordinator is not None:
            coordinator = ha_parts.coordinator
            coordinator.advertised_url = str(config["ha.advertised.url"]) or (
                f"http://{self.api_address[0]}:{self.api_address[1]}"
            )
            coordinator.on_change = controller.leadership_changed
            supervisor.add("ha", coordinator.run())
            supervisor.add("standby-reads", refresh_while_standby(controller, loop))
        if bridge is not None:
            supervisor.add("mqtt", bridge.run())
        supervisor.add("reload", watch_reload())
        supervisor.add("retention", prune_history(controller, lambda: self.config))
        if notifier.watchdog_seconds:
            supervisor.add("watchdog", feed_watchdog())
        stop_requested = asyncio.Event()

        timeout = float(config["controller.shutdown.timeout.seconds"])

        async def stop_on_signal() -> None:
            """The loop ends after its current cycle; a second signal or the timeout cancels it."""
            await flags.stop.wait()
            notifier.stopping()
            log.info("stopping: finishing the current cycle", timeout_seconds=timeout)
            loop.stop()
            try:
                async with asyncio.timeout(timeout):
                    await flags.force.wait()
                log.warning("second signal: stopping now")
            except TimeoutError:
                log.error("the cycle did not finish within the shutdown timeout; stopping now")
            stop_requested.set()

        supervisor.add("signals", stop_on_signal())

        async def learn_cluster_label() -> None:
            """Without cluster.id the `cluster` label is the id Kafka reports, read once a broker answers
            (until then the series carry no `cluster` label)."""
            while not self.metrics.cluster:
                with contextlib.suppress(Exception):  # the cycles report the cluster's reachability
                    self.metrics.cluster = str(await cluster.cluster_id() or "")
                if not self.metrics.cluster:
                    await asyncio.sleep(loop.interval)
            log.info("metrics labelled with the cluster id Kafka reports", cluster=self.metrics.cluster)

        labeller = None if self.metrics.cluster else asyncio.create_task(learn_cluster_label())
        exit_code = 0
        supervision = asyncio.create_task(supervisor.run(stop_requested, stopping=flags.stop))
        try:
            await supervision
        except Exception as exc:
            log.error("daemon failed", error=repr(exc))
            exit_code = 1
        finally:
            if labeller is not None:
                labeller.cancel()
            try:
                async with asyncio.timeout(timeout):
                    await runner.cleanup()
                    await cluster.close()
                    await store.close()
                    if proposals is not None:
                        await proposals.close()
                    if ha_parts is not None:
                        await asyncio.to_thread(ha_parts.close)
            except TimeoutError:
                log.error("shutdown timed out; exiting anyway", seconds=timeout)
                exit_code = exit_code or 1
            flags.uninstall(asyncio.get_running_loop())
            pacer.release()
        log.info("reassignd stopped", exit_code=exit_code)
        return exit_code
