"""`reassignd run`: builds the daemon from its config and runs it until a signal stops it.

In uvicorn's shape: `startup` builds every collaborator in the order they need each other, each given
what it uses when it is made; `main_loop` runs the long-running tasks under one Supervisor (the
controller's fixed-rate loop, the API server, HA, MQTT, the signal watchers) until a signal or a failure;
`shutdown` closes what startup opened. SIGHUP reloads the config (validated first; the old one stays on
error), SIGTERM or SIGINT stops gracefully within `controller.shutdown.timeout.seconds` (the current cycle
finishes, state is persisted, in-flight moves are left to Kafka) and a second signal forces the exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from reassignd import config_keys, logs
from reassignd.cluster.errors import KafkaErrorInfo
from reassignd.cluster.kafka import AdminSettings, KafkaClusterAdmin
from reassignd.cluster.marker import KafkaMarker
from reassignd.config import Config
from reassignd.config.reload import reload_config
from reassignd.daemon.allocator import limit_malloc_arenas
from reassignd.daemon.api import ACCESS_KEY, create_app, load_openapi, parse_listen, start_api
from reassignd.daemon.clock import SteadyClock
from reassignd.daemon.collector import Pacer, tune_collector
from reassignd.daemon.controller import AutoThrottle, Controller
from reassignd.daemon.ha import HaParts, cluster_label, node_name, open_ha_store, refresh_while_standby
from reassignd.daemon.http_limits import ServerLimits
from reassignd.daemon.metrics import DaemonMetrics
from reassignd.daemon.mqtt import EventQueue, MqttBridge, build_bridge
from reassignd.daemon.proposals import ProposalService, start_proposals
from reassignd.daemon.runtime import FixedRateLoop, SignalFlags, Supervisor
from reassignd.daemon.settings import FileSettings
from reassignd.daemon.systemd import SystemdNotifier
from reassignd.daemon.writer import Writer, WriterLease
from reassignd.engine.anomalies import AnomalyKind, HealingMode, HealingSettings
from reassignd.store.actor import acting_as
from reassignd.store.aio import AsyncStore
from reassignd.store.base import StoreCorrupt, StoreError, StoreUnavailable
from reassignd.store.sqlite import SqliteStore

log = logs.get_logger("reassignd.daemon")


class CannotStart(Exception):
    """The daemon cannot start for a reason its operator fixes (its API address in use): `reassignd run`
    says it in one line and exits 1, without a traceback."""


def auto_throttle_from(config: Config) -> AutoThrottle | None:
    if not config[config_keys.AUTO_THROTTLE_ENABLE]:
        return None
    return AutoThrottle(
        step=int(config[config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND]),
        ceiling=int(config[config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND]),
    )


def file_settings_from(config: Config) -> FileSettings:
    """The config file's limits and auto-throttle: what runtime changes override (daemon/settings.py)."""
    return FileSettings(
        config.limits(),
        auto_throttle_from(config),
        int(config[config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND]),
        int(config[config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND]),
    )


def healing_settings_from(config: Config) -> HealingSettings:
    return HealingSettings(
        HealingMode(str(config[config_keys.SELF_HEALING_MODE])),
        broker_failure_seconds=float(config[config_keys.SELF_HEALING_BROKER_FAILURE_SECONDS]),
        detectors=frozenset(AnomalyKind(k) for k in config[config_keys.SELF_HEALING_DETECTORS]),
        new_broker_seconds=float(config[config_keys.SELF_HEALING_NEW_BROKER_SECONDS]),
        max_bytes=int(config[config_keys.SELF_HEALING_MAX_BYTES]),
        max_partitions=int(config[config_keys.SELF_HEALING_MAX_PARTITIONS]),
        max_duration_seconds=float(config[config_keys.SELF_HEALING_MAX_DURATION_SECONDS]),
        cooldown_seconds=float(config[config_keys.SELF_HEALING_COOLDOWN_SECONDS]),
        violation_seconds=float(config[config_keys.SELF_HEALING_VIOLATION_SECONDS]),
        under_replicated_seconds=float(config[config_keys.SELF_HEALING_UNDER_REPLICATED_SECONDS]),
        balance_threshold=float(config[config_keys.SELF_HEALING_BALANCE_THRESHOLD]),
        byte_balance_threshold=float(config[config_keys.SELF_HEALING_BYTE_BALANCE_THRESHOLD]),
        disk_capacity_threshold=float(config[config_keys.SELF_HEALING_DISK_CAPACITY_THRESHOLD]),
        log_dir_failure_seconds=float(config[config_keys.SELF_HEALING_LOG_DIR_FAILURE_SECONDS]),
        anomaly_retention_seconds=float(config[config_keys.SELF_HEALING_ANOMALY_RETENTION_SECONDS]),
        cycle_interval_seconds=float(config[config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS]),
    )


async def prune_history(controller: Controller, config: Callable[[], Config], interval: float = 60.0) -> None:
    """Retention: ended plans beyond `store.retention.plans` or older than `store.retention.days` go, a
    few at a time, off the cycle path, and so do anomalies that ended longer than
    `self.healing.anomaly.retention.seconds` ago; only the leader prunes (the store fences it like a
    commit)."""
    while True:
        await asyncio.sleep(interval)
        if not controller.is_leader or controller.findings:  # held: the store stays as it was found
            continue
        days, keep = (
            float(config()[config_keys.STORE_RETENTION_DAYS]),
            int(config()[config_keys.STORE_RETENTION_PLANS]),
        )
        try:
            pruned = await controller.store.prune(controller.clock() - days * 86400, keep, limit=5)
            anomalies = await controller.healing.prune()
        except StoreUnavailable as exc:  # the store's health logs it once, shows it, and sees it return
            log.debug("pruning the store's history failed; retried later", error=str(exc))
            continue
        except StoreError as exc:
            log.warning("pruning the store's history failed; retried later", error=str(exc))
            continue
        if anomalies:
            log.info("anomalies pruned", anomalies=list(anomalies))
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


class CycleWatch:
    """systemd's view of the controller loop: STATUS after each good cycle, WATCHDOG=1 while they keep
    coming (a hung loop stops the pings)."""

    def __init__(self, notifier: SystemdNotifier) -> None:
        self.notifier = notifier
        self.last_ok = asyncio.get_running_loop().time()

    def on_cycle(self, status: str | None, seconds: float, error: BaseException | None) -> None:
        if error is None:
            self.last_ok = asyncio.get_running_loop().time()
            self.notifier.status(status or "")

    async def feed(self, loop: FixedRateLoop) -> None:
        assert self.notifier.watchdog_seconds is not None
        period = self.notifier.watchdog_seconds / 2
        stale_after = max(self.notifier.watchdog_seconds, 3 * loop.interval)
        while True:
            if asyncio.get_running_loop().time() - self.last_ok < stale_after:
                self.notifier.watchdog()
            await asyncio.sleep(period)


def metrics_endpoint(metrics: DaemonMetrics) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.Response:
        body, content_type = metrics.exposition(request.headers.get("Accept"))
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type
        return response

    return handler


@dataclass
class Started:
    """What startup made, for main_loop and shutdown."""

    cluster: KafkaClusterAdmin
    store: AsyncStore
    controller: Controller
    loop: FixedRateLoop
    runner: web.AppRunner
    app: web.Application
    notifier: SystemdNotifier
    watch: CycleWatch
    flags: SignalFlags
    pacer: Pacer
    proposals: ProposalService | None = None
    ha: HaParts | None = None
    bridge: MqttBridge | None = None
    stop_requested: asyncio.Event = field(default_factory=asyncio.Event)
    labeller: asyncio.Task[None] | None = None
    sizer: asyncio.Task[None] | None = None
    writer: WriterLease | None = None


@dataclass
class Daemon:
    config: Config
    overrides: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    metrics: DaemonMetrics = field(default_factory=DaemonMetrics)
    api_address: tuple[str, int] | None = None

    async def run(self) -> int:
        started = await self.startup()
        exit_code = 0
        try:
            exit_code = await self.main_loop(started)
        finally:
            exit_code = await self.shutdown(started, exit_code)
        return exit_code

    # -- startup ------------------------------------------------------------------------------------

    async def startup(self) -> Started:
        tune_collector()
        limit_malloc_arenas()
        config = self.config
        clock = SteadyClock()  # durations on the monotonic clock, stamps from the wall clock (clock.py)
        ha = await _open_ha(config, clock)
        writer_fence = _LateFence()
        fences = [ha.coordinator.write_fence] if ha and ha.coordinator else []
        cluster = KafkaClusterAdmin(
            AdminSettings.from_config(config), MetricsObserver(self.metrics), _all_of([*fences, writer_fence])
        )
        writer = WriterLease(
            cluster.group_transport(),
            node_name(config),
            session_seconds=float(config[config_keys.CLUSTER_WRITER_SESSION_TIMEOUT_SECONDS]),
            cluster_id=lambda: kafka_cluster_id(cluster),
            eligible=_eligible(ha),
        )
        writer_fence.fence = writer.write_fence
        proposals = await start_proposals(config, cluster)  # early: its JVM starts while little else runs
        store = await self._store(ha, clock)
        if ha is not None or config[config_keys.CLUSTER_ID]:
            self.metrics.cluster = ha.cluster if ha else str(config[config_keys.CLUSTER_ID])
        events = (
            EventQueue.from_config(config, node_name(config), self.metrics)
            if config[config_keys.MQTT_ENABLE]
            else None
        )
        wakeup = asyncio.Event()
        controller = Controller(
            cluster,
            store,
            config.limits(),
            metrics=self.metrics,
            clock=clock,
            allow_rf_change=bool(config[config_keys.REASSIGNMENT_ALLOW_REPLICATION_FACTOR_CHANGE]),
            auto_throttle=auto_throttle_from(config),
            file_settings=file_settings_from(config),
            events=events.sink if events else None,
            wake=wakeup.set,
            guard=ha.coordinator.guard if ha and ha.coordinator else None,
            probe_timeout=float(config[config_keys.CLUSTER_PROBE_TIMEOUT_SECONDS]),
            probe_interval=float(config[config_keys.CLUSTER_PROBE_INTERVAL_SECONDS]),
            healing=healing_settings_from(config),
            marker=KafkaMarker(cluster.group_transport(), writer.membership),
        )
        controller.ownership.node = node_name(config)
        controller.healing.interval = float(config[config_keys.SELF_HEALING_CHECK_INTERVAL_SECONDS])
        bridge = None
        if events is not None:
            label = ha.cluster if ha else await cluster_label(config, cluster)
            bridge = build_bridge(config, controller, self.metrics, label, events)
        if ha is not None and ha.coordinator is not None:
            await controller.leadership_changed(False, None)  # a standby until elected
        await controller.writer_changed(False, None)  # no writes until the writer group says so
        await controller.start()
        if proposals is not None:
            proposals.decommissioned = controller.decommissioned_brokers
        started = await self._serving(
            controller, wakeup, cluster=cluster, store=store, proposals=proposals, ha=ha, bridge=bridge
        )
        started.writer = writer
        return started

    async def _store(self, ha: HaParts | None, clock: SteadyClock) -> AsyncStore:
        if ha is not None:
            return AsyncStore(ha.store)
        state_dir = Path(str(self.config[config_keys.STATE_DIR]))
        try:
            await asyncio.to_thread(state_dir.mkdir, parents=True, exist_ok=True)
            return AsyncStore(await asyncio.to_thread(SqliteStore, state_dir, clock=clock))
        except OSError as exc:
            reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
            raise CannotStart(
                f"cannot create the state directory {state_dir} (state.dir): {reason}"
            ) from None
        except StoreCorrupt as exc:
            raise CannotStart(
                f"{exc}; move it aside (reassignd starts with an empty store) or restore it from a backup"
            ) from None
        except StoreUnavailable as exc:
            raise CannotStart(
                f"{exc}; check the disk's free space and the permissions of {state_dir}"
            ) from None

    async def _serving(
        self,
        controller: Controller,
        wakeup: asyncio.Event,
        *,
        cluster: KafkaClusterAdmin,
        store: AsyncStore,
        proposals: ProposalService | None,
        ha: HaParts | None,
        bridge: MqttBridge | None,
    ) -> Started:
        """The controller's loop, the signal handlers and the API, serving."""
        config = self.config
        notifier = SystemdNotifier(self.env)
        watch, pacer = CycleWatch(notifier), Pacer()
        loop = FixedRateLoop(
            pacer.paced(controller.cycle),
            float(config[config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS]),
            min_interval=float(config[config_keys.CONTROLLER_CYCLE_MIN_INTERVAL_SECONDS]),
            on_result=watch.on_cycle,
            backoff_max=float(config[config_keys.CONTROLLER_ERROR_BACKOFF_MAX_SECONDS]),
            wakeup=wakeup,
        )
        flags = SignalFlags()
        flags.install(asyncio.get_running_loop())
        app, runner = await self._api(controller, proposals)
        log.info(
            "reassignd running",
            api=f"http://{self.api_address[0]}:{self.api_address[1]}" if self.api_address else None,
            state_dir=str(Path(str(config[config_keys.STATE_DIR]))),
        )
        notifier.ready(f"serving on {self.api_address[0]}:{self.api_address[1]}" if self.api_address else "")
        if config.ignored_env:
            log.warning("unknown REASSIGND_* variables ignored", variables=list(config.ignored_env))
        return Started(
            cluster,
            store,
            controller,
            loop,
            runner,
            app,
            notifier,
            watch,
            flags,
            pacer,
            proposals,
            ha,
            bridge,
        )

    async def _api(
        self, controller: Controller, proposals: ProposalService | None
    ) -> tuple[web.Application, web.AppRunner]:
        config = self.config
        server_limits = ServerLimits.from_config(config)
        app = create_app(
            controller,
            token=config.secret(config_keys.API_TOKEN),
            read_token=config.secret(config_keys.API_READ_TOKEN),
            reads_open=bool(config[config_keys.API_READ_OPEN]),
            metrics_handler=metrics_endpoint(self.metrics),
            openapi=load_openapi(),
            on_refused=lambda code: self.metrics.command_rejected("api", code),
            max_body_bytes=server_limits.max_body_bytes,
            body_timeout=server_limits.body_timeout,
            proposals=proposals,
        )
        host, port = parse_listen(str(config[config_keys.API_LISTEN]))
        try:
            runner = await start_api(app, host, port, limits=server_limits)
        except OSError as exc:
            reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
            raise CannotStart(
                f"cannot serve the API on {host}:{port} (api.listen): {reason}; is another reassignd, or "
                "another program, listening there?"
            ) from None
        bound = [a for a in runner.addresses if isinstance(a, tuple)]
        self.api_address = (str(bound[0][0]), int(bound[0][1])) if bound else (host, port)
        return app, runner

    # -- main loop ------------------------------------------------------------------------------------

    async def main_loop(self, started: Started) -> int:
        """Every task under one Supervisor until a stop signal or the first task that fails; the exit code."""
        supervisor = self._supervisor(started)
        if not self.metrics.cluster:
            started.labeller = asyncio.create_task(self._learn_cluster_label(started))
        started.sizer = asyncio.create_task(self._learn_cluster_size(started))
        try:
            await asyncio.create_task(supervisor.run(started.stop_requested, stopping=started.flags.stop))
        except Exception as exc:
            log.error("daemon failed", error=repr(exc))
            return 1
        return 0

    def _supervisor(self, started: Started) -> Supervisor:
        controller, loop = started.controller, started.loop
        supervisor = Supervisor()
        supervisor.add("controller", loop.run())
        supervisor.add("cluster-probe", controller.watch_cluster())
        supervisor.add("store-watch", controller.watch_store())
        supervisor.add("self-healing", controller.watch_anomalies())
        coordinator = started.ha.coordinator if started.ha else None
        assert self.api_address is not None
        address = (
            str(self.config[config_keys.HA_ADVERTISED_URL])
            or f"http://{self.api_address[0]}:{self.api_address[1]}"
        )
        if started.writer is not None:

            async def writer_changed(holding: bool, writer: Writer | None) -> None:
                await controller.writer_changed(holding, writer.to_json() if writer else None)

            supervisor.add("writer", started.writer.run(writer_changed, address))
        if coordinator is not None:
            supervisor.add("ha", coordinator.run(controller.leadership_changed, address))
            supervisor.add("standby-reads", refresh_while_standby(controller, loop))
        if started.bridge is not None:
            supervisor.add("mqtt", started.bridge.run())
        supervisor.add("reload", self._reloads(started))
        supervisor.add("retention", prune_history(controller, lambda: self.config))
        if started.notifier.watchdog_seconds:
            supervisor.add("watchdog", started.watch.feed(loop))
        supervisor.add("signals", self._stop_on_signal(started))
        return supervisor

    async def _stop_on_signal(self, started: Started) -> None:
        """The loop ends after its current cycle; a second signal, the timeout or a cluster that does not
        answer cancels it (a cycle waiting on an unreachable cluster would only wait out its timeouts, and
        cancelling it is as safe as a kill: the order of its effects is)."""
        flags, timeout = started.flags, self._shutdown_timeout
        await flags.stop.wait()
        started.notifier.stopping()
        log.info("stopping: finishing the current cycle", timeout_seconds=timeout)
        started.loop.stop()
        force = asyncio.ensure_future(flags.force.wait())
        lost = asyncio.ensure_future(started.controller.link.lost())
        try:
            async with asyncio.timeout(timeout):
                await asyncio.wait((force, lost), return_when=asyncio.FIRST_COMPLETED)
            if force.done():
                log.warning("second signal: stopping now")
            else:
                log.info("stopping now: the cluster does not answer, the cycle's calls are left")
        except TimeoutError:
            log.error("the cycle did not finish within the shutdown timeout; stopping now")
        finally:
            force.cancel()
            lost.cancel()
        started.stop_requested.set()

    async def _reloads(self, started: Started) -> None:
        """SIGHUP, validated first: the running config stays on error."""
        flags, notifier = started.flags, started.notifier
        while True:
            await flags.reload.wait()
            flags.reload.clear()
            notifier.reloading()
            result = reload_config(self.config, env=self.env, overrides=self.overrides)
            self.metrics.config_reloaded(result.ok)
            if not result.ok:
                problems = [str(p) for p in result.problems]
                log.error("config reload rejected; keeping the running config", problems=problems)
                notifier.ready("config reload rejected; running config kept")  # ends RELOADING=1
                continue
            before, after = self.config.redacted(), result.config.redacted()
            self.config = result.config
            await self._reloaded(started, result.config)
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
            started.loop.wake()

    async def _reloaded(self, started: Started, config: Config) -> None:
        """The reloadable keys, applied where they live."""
        access = started.app[ACCESS_KEY]
        access.operator = config.secret(config_keys.API_TOKEN)
        access.reader = config.secret(config_keys.API_READ_TOKEN)
        access.reads_open = bool(config[config_keys.API_READ_OPEN])
        with acting_as({"via": "sighup"}):  # what the reload changes is journaled as by SIGHUP
            await started.controller.config_reloaded(file_settings_from(config))
        started.controller.healing.reload(
            healing_settings_from(config), float(config[config_keys.SELF_HEALING_CHECK_INTERVAL_SECONDS])
        )
        link = started.controller.link
        link.probe_timeout = float(config[config_keys.CLUSTER_PROBE_TIMEOUT_SECONDS])
        link.probe_interval = float(config[config_keys.CLUSTER_PROBE_INTERVAL_SECONDS])
        loop = started.loop
        loop.backoff_max = float(config[config_keys.CONTROLLER_ERROR_BACKOFF_MAX_SECONDS])
        loop.interval = float(config[config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS])
        loop.min_interval = float(config[config_keys.CONTROLLER_CYCLE_MIN_INTERVAL_SECONDS])
        if started.bridge is not None:
            started.bridge.reload(config)

    async def _learn_cluster_label(self, started: Started) -> None:
        """Without cluster.id the `cluster` label is the id Kafka reports, read once a broker answers
        (until then the series carry no `cluster` label)."""
        while not self.metrics.cluster:
            with contextlib.suppress(Exception):  # the cycles report the cluster's reachability
                self.metrics.cluster = str(await started.cluster.cluster_id() or "")
            if not self.metrics.cluster:
                await asyncio.sleep(started.loop.interval)
        log.info("metrics labelled with the cluster id Kafka reports", cluster=self.metrics.cluster)

    async def _learn_cluster_size(self, started: Started) -> None:
        """Once a broker answers: how a plan's reads ask for metadata depends on the cluster's size. Asked
        again less and less often while no broker answers (the cycles report the cluster's reachability)."""
        pause = min(started.loop.interval, 60.0)
        while True:
            try:
                await started.cluster.learn_cluster_size()
                return
            except Exception as exc:
                log.debug("cluster size not read yet", error=repr(exc))
            await asyncio.sleep(pause)
            pause = min(2 * pause, 60.0)

    @property
    def _shutdown_timeout(self) -> float:
        return float(self.config[config_keys.CONTROLLER_SHUTDOWN_TIMEOUT_SECONDS])

    # -- shutdown -------------------------------------------------------------------------------------

    async def shutdown(self, started: Started, exit_code: int) -> int:
        """Close what startup opened, within the shutdown timeout; the exit code."""
        for task in (started.labeller, started.sizer):
            if task is not None:
                task.cancel()
        try:
            async with asyncio.timeout(self._shutdown_timeout):
                await started.runner.cleanup()
                # calls to a cluster that does not answer would only wait out their timeouts: left
                await started.cluster.close(wait=started.controller.link.state.reachable)
                if isinstance(marker := started.controller.ownership.port, KafkaMarker):
                    await asyncio.to_thread(marker.close)
                await started.store.close()
                if started.proposals is not None:
                    await started.proposals.close()
                if started.ha is not None:
                    await asyncio.to_thread(started.ha.close)
        except TimeoutError:
            log.error("shutdown timed out; exiting anyway", seconds=self._shutdown_timeout)
            exit_code = exit_code or 1
        started.flags.uninstall(asyncio.get_running_loop())
        started.pacer.release()
        log.info("reassignd stopped", exit_code=exit_code)
        return exit_code


def _eligible(ha: HaParts | None) -> Callable[[], bool]:
    """With HA only the ZooKeeper leader takes part in the writer group (a standby would contend)."""
    coordinator = ha.coordinator if ha else None
    if coordinator is None:
        return lambda: True
    return lambda: coordinator.is_leader


class _LateFence:
    """The writer lease's fence, set once the lease exists (it needs the cluster adapter made first)."""

    def __init__(self) -> None:
        self.fence: Callable[[], None] | None = None

    def __call__(self) -> None:
        if self.fence is not None:
            self.fence()


def _all_of(fences: list[Callable[[], None]]) -> Callable[[], None]:
    def fence() -> None:
        for each in fences:
            each()

    return fence


async def kafka_cluster_id(cluster: KafkaClusterAdmin) -> str:
    """The id Kafka reports (never `cluster.id`: every daemon on the cluster must name the same group)."""
    while True:
        try:
            reported = await cluster.cluster_id()
        except Exception as exc:
            log.warning("cluster id not available yet; retrying", error=repr(exc))
            reported = None
        if reported:
            return str(reported)
        await asyncio.sleep(2)


async def _open_ha(config: Config, clock: SteadyClock) -> HaParts | None:
    """With `state.store = zookeeper`: the store, and the election it is fenced by, under the cluster's
    label. Without cluster.id the label is the id Kafka reports, read with a client of its own, since the
    daemon's client is made with the election's write fence."""
    if config[config_keys.STATE_STORE] != "zookeeper":
        return None
    if config[config_keys.CLUSTER_ID]:
        return await open_ha_store(config, str(config[config_keys.CLUSTER_ID]), clock)
    probe = KafkaClusterAdmin(AdminSettings.from_config(config))
    try:
        label = await cluster_label(config, probe)
    finally:
        await probe.close()
    return await open_ha_store(config, label, clock)
