"""Prometheus metrics of one daemon: a declared table of families and a typed facade the controller calls.

Each daemon instance owns its `CollectorRegistry` (never prometheus_client's global one), so tests can run
several daemons in one process and the HA tests can scrape each separately. Names follow Prometheus
conventions: `reassignd_` prefix, base units in the name (`_bytes`, `_seconds`), `_total` on counters,
`_info` on the build info. `METRIC_NAMES` lists every family as PromQL sees it, so the dashboards and alert
rules can be checked against what is actually exported.

What a scrape shows (docs/deployment.md, "Metrics"):

- every series carries `cluster`, the daemon's `cluster.id` (else the id Kafka reports, once it answered),
  so the dashboard and the alert rules group by it without any scrape configuration;
- a labelled counter exists at 0 for every label value known in advance (outcomes, API names, refusal
  codes, and the brokers of the running plan for auto-throttle), so `increase()` sees its first event;
- no `_created` series (they double the series count and nothing here reads them);
- the running plan's gauges are replaced, not merged: when no plan runs they are 0 or absent.

Label `direction` is `incoming` (a broker receiving replicas; Kafka's follower throttle applies there) or
`outgoing` (a broker serving them as leader; the leader throttle applies there).
"""

from __future__ import annotations

import math
import platform
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric

from reassignd import __version__
from reassignd.engine.lifecycle import PlanStatus
from reassignd.engine.run import RunState
from reassignd.engine.state import Status
from reassignd.store.base import PlanSummary

DIRECTIONS: Final = ("incoming", "outgoing")
CYCLE_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
STEP_BUCKETS: Final = (
    1.0,
    5.0,
    15.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1800.0,
    3600.0,
    7200.0,
    21600.0,
    86400.0,
)


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str  # as exposed and queried: counters end in _total, info in _info
    kind: str  # counter | gauge | histogram | info
    doc: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


SPECS: Final[tuple[MetricSpec, ...]] = (
    MetricSpec("reassignd_build_info", "info", "Version of reassignd and Python.", ()),
    MetricSpec(
        "reassignd_plans",
        "gauge",
        "Plans in the store by state (queued, running, paused, cancelling, completed, cancelled).",
        ("state",),
    ),
    MetricSpec(
        "reassignd_partitions",
        "gauge",
        "Partitions of the running plan by state (while cancelling: on the way back); all 0 when no plan "
        "runs.",
        ("state",),
    ),
    MetricSpec(
        "reassignd_inflight_replica_movements",
        "gauge",
        "Replicas being moved, per broker and direction.",
        ("broker", "direction"),
    ),
    MetricSpec(
        "reassignd_inflight_leader_movements", "gauge", "Steps in flight that move a partition's leadership."
    ),
    MetricSpec(
        "reassignd_plan_total_bytes",
        "gauge",
        "Bytes the running plan copies in all, fixed when it started (each partition's size then, times "
        "the replicas it gains).",
        ("plan",),
    ),
    MetricSpec(
        "reassignd_plan_remaining_bytes",
        "gauge",
        "Bytes the running plan still has to copy (what producers wrote since the start included).",
        ("plan",),
    ),
    MetricSpec(
        "reassignd_plan_moved_bytes",
        "gauge",
        "Bytes the running plan has copied so far (finished copies, and copies in flight as far as they "
        "got).",
        ("plan",),
    ),
    MetricSpec(
        "reassignd_plan_eta_seconds",
        "gauge",
        "Estimated seconds until the running plan completes (NaN: unknown).",
        ("plan",),
    ),
    MetricSpec(
        "reassignd_moved_bytes_total",
        "counter",
        "Bytes copied to new replicas by reassignd's moves, over all plans, as the copies progress (read "
        "every cycle, not only when a step finishes).",
    ),
    MetricSpec(
        "reassignd_reassignment_bytes_per_second",
        "gauge",
        "How fast reassignd's copies run, per broker, over the stall window: incoming into the broker's "
        "new replicas, outgoing from it as the partitions' leader (beside the throttle that bounds it).",
        ("broker", "direction"),
    ),
    MetricSpec(
        "reassignd_throttle_rate_bytes_per_second",
        "gauge",
        "Replication throttle rate reassignd applied, per broker and direction (outgoing: leader rate, "
        "incoming: follower rate).",
        ("broker", "direction"),
    ),
    MetricSpec(
        "reassignd_throttle_config_writes_total",
        "counter",
        "Throttle config writes reassignd applied for its plans, by action: set (a rate or a throttled "
        "replica list written) or restored (a config returned to what it was before the plan).",
        ("action",),
    ),
    MetricSpec(
        "reassignd_stalled_movements",
        "gauge",
        "Moves of the running plan whose new replica does not catch up with producers (0 when no plan runs).",
    ),
    MetricSpec("reassignd_stalls_detected_total", "counter", "Moves detected as stalled."),
    MetricSpec(
        "reassignd_under_min_isr_partitions",
        "gauge",
        "Partitions of the running plan with fewer in-sync replicas than their min.insync.replicas.",
    ),
    MetricSpec(
        "reassignd_auto_throttle_raises_total",
        "counter",
        "Throttle rate raises made by auto-throttle, per broker (from 0 for every broker of the cluster "
        "once a plan ran).",
        ("broker",),
    ),
    MetricSpec(
        "reassignd_foreign_reassignments",
        "gauge",
        "Partitions of the running plan that another tool is reassigning (0 when no plan runs).",
    ),
    MetricSpec("reassignd_steps_started_total", "counter", "Reassignment steps started."),
    MetricSpec("reassignd_steps_completed_total", "counter", "Reassignment steps completed."),
    MetricSpec(
        "reassignd_step_duration_seconds",
        "histogram",
        "Time from a step's start to its completion.",
        (),
        STEP_BUCKETS,
    ),
    MetricSpec(
        "reassignd_cycle_duration_seconds", "histogram", "Time one controller cycle took.", (), CYCLE_BUCKETS
    ),
    MetricSpec(
        "reassignd_cycles_total", "counter", "Controller cycles by outcome (ok, error).", ("outcome",)
    ),
    MetricSpec(
        "reassignd_cluster_calls_total", "counter", "Admin calls to the cluster by Kafka API.", ("api",)
    ),
    MetricSpec(
        "reassignd_cluster_call_errors_total",
        "counter",
        "Admin calls to the cluster that failed (after retries), by API.",
        ("api",),
    ),
    MetricSpec(
        "reassignd_cluster_last_success_timestamp_seconds",
        "gauge",
        "Unix time of the last successful call to the cluster.",
    ),
    MetricSpec("reassignd_ha_is_leader", "gauge", "1 when this daemon is the active leader, 0 on standby."),
    MetricSpec(
        "reassignd_cluster_writer",
        "gauge",
        "1 while this daemon holds the cluster's writer right (the leader of its Kafka group "
        "reassignd.<cluster id>), 0 while another reassignd holds it or none is confirmed: then it does "
        "not write.",
    ),
    MetricSpec(
        "reassignd_cluster_writer_elsewhere",
        "gauge",
        "1 while another reassignd holds this cluster's writer right and this daemon, which would write "
        "(no HA, or the HA leader), refuses to: a second daemon on the cluster, by mistake or not.",
    ),
    MetricSpec(
        "reassignd_cluster_reachable",
        "gauge",
        "1 while the daemon can read the Kafka cluster, 0 while no broker answers.",
    ),
    MetricSpec(
        "reassignd_store_available",
        "gauge",
        "1 while the state store commits and answers, 0 while it cannot (a full disk, a lock held by another "
        "process, an I/O error, a call unanswered for 10 s): nothing is written to the cluster meanwhile.",
    ),
    MetricSpec(
        "reassignd_store_findings",
        "gauge",
        "What the daemon found wrong with its store at start (a damaged end of the WAL, a failed "
        "integrity check); it holds every cluster write until an operator runs `reassignd recover`.",
    ),
    MetricSpec(
        "reassignd_anomalies",
        "gauge",
        "Anomalies self-healing has seen (docs/self-healing.md), by kind (the detectors of "
        "self.healing.detectors) and state (detected, proposed, approved, executing, fixed, ignored, "
        "expired); only the writer daemon checks.",
        ("kind", "state"),
    ),
    MetricSpec(
        "reassignd_mqtt_dropped_events_total",
        "counter",
        "Events dropped from the MQTT queue (oldest first) while the broker was unreachable.",
    ),
    MetricSpec(
        "reassignd_rejected_commands_total",
        "counter",
        "Commands refused, by channel (api: a change over HTTP answered with an error; mqtt: a command "
        "rejected or refused) and reason (the error code).",
        ("channel", "reason"),
    ),
    MetricSpec(
        "reassignd_config_reloads_total", "counter", "SIGHUP reloads by outcome (ok, error).", ("outcome",)
    ),
)

METRIC_NAMES: Final[frozenset[str]] = frozenset(spec.name for spec in SPECS)
_SUFFIXES: Final = {"counter": "_total", "info": "_info", "gauge": "", "histogram": ""}

CLUSTER_LABEL: Final = "cluster"
OUTCOMES: Final = ("ok", "error")
PARTITION_STATES: Final = tuple(s.value for s in Status)
PLAN_STATES: Final = tuple(s.value for s in PlanStatus)
THROTTLE_ACTIONS: Final = ("set", "restored")
CLUSTER_APIS: Final = (
    "alter_partition_reassignments",
    "alter_replica_log_dirs",
    "create_topics",
    "describe_cluster",
    "describe_configs",
    "describe_log_dirs",
    "elect_leaders",
    "incremental_alter_configs",
    "list_partition_reassignments",
    "list_topics",
)
"""The `api` values of the cluster adapter's calls (cluster/kafka.py, cluster/clients.py)."""
API_REFUSALS: Final = (
    "invalid_request",
    "invalid_json",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "request_timeout",
    "conflict",
    "payload_too_large",
    "not_leader",
    "invalid_plan",
    "internal",
    "unavailable",
)
"""Error codes an API change can be answered with (daemon/api.py STATUS_BY_CODE)."""
MQTT_REFUSALS: Final = (
    "no_secret",
    "malformed",
    "unsigned",
    "bad_signature",
    "unknown_command",
    "stale",
    "replayed",
    "unavailable",
    "overloaded",
    "invalid_request",
    "not_found",
    "conflict",
    "not_leader",
    "internal",
)
"""Why an MQTT command is rejected (daemon/mqtt_auth.py) or refused by the controller (service codes)."""


def sample_names(spec: MetricSpec) -> frozenset[str]:
    """Every series name a family exposes (histograms: _bucket, _sum, _count)."""
    if spec.kind == "histogram":
        return frozenset(spec.name + suffix for suffix in ("_bucket", "_sum", "_count"))
    return frozenset({spec.name})


class _Scraped:
    """The registry as a scrape shows it: `cluster` on every sample, no `_created` samples."""

    def __init__(self, registry: CollectorRegistry, cluster: Callable[[], str]) -> None:
        self._registry = registry
        self._cluster = cluster

    def collect(self) -> Iterator[Metric]:
        cluster = self._cluster()
        for family in self._registry.collect():
            shown = Metric(family.name, family.documentation, family.type, family.unit)
            shown.samples = [
                sample._replace(labels={**sample.labels, CLUSTER_LABEL: cluster}) if cluster else sample
                for sample in family.samples
                if not sample.name.endswith("_created")
            ]
            yield shown


def exposition(
    registry: CollectorRegistry, accept: str | None = None, cluster: str = ""
) -> tuple[bytes, str]:
    """(body, Content-Type) for a /metrics response; OpenMetrics when the scraper asks for it."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(_Scraped(registry, lambda: cluster)), content_type


def _create(spec: MetricSpec, registry: CollectorRegistry) -> Any:
    base = spec.name.removesuffix(_SUFFIXES[spec.kind])
    if spec.kind == "counter":
        return Counter(base, spec.doc, spec.labels, registry=registry)
    if spec.kind == "gauge":
        return Gauge(base, spec.doc, spec.labels, registry=registry)
    if spec.kind == "histogram":
        return Histogram(base, spec.doc, spec.labels, registry=registry, buckets=spec.buckets)
    return Info(base, spec.doc, spec.labels, registry=registry)


class DaemonMetrics:
    """The controller's view of the metrics: one method per thing it observes.

    `cluster` is the value of the `cluster` label on every series; empty (no label) until it is known.
    """

    def __init__(self, registry: CollectorRegistry | None = None, *, cluster: str = "") -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.cluster = cluster
        self._metrics = {spec.name: _create(spec, self.registry) for spec in SPECS}
        self._labelled: dict[str, set[tuple[str, ...]]] = {}
        self._metrics["reassignd_build_info"].info(
            {"version": __version__, "python": platform.python_version()}
        )
        self._metrics["reassignd_ha_is_leader"].set(0)
        self._current_plan: str | None = None
        self._moved_seen: tuple[str, int] | None = None
        for outcome in OUTCOMES:
            self._metrics["reassignd_cycles_total"].labels(outcome)
            self._metrics["reassignd_config_reloads_total"].labels(outcome)
        for action in THROTTLE_ACTIONS:
            self._metrics["reassignd_throttle_config_writes_total"].labels(action)
        for api in CLUSTER_APIS:
            self._metrics["reassignd_cluster_calls_total"].labels(api)
            self._metrics["reassignd_cluster_call_errors_total"].labels(api)
        for channel, reasons in (("api", API_REFUSALS), ("mqtt", MQTT_REFUSALS)):
            for reason in reasons:
                self._metrics["reassignd_rejected_commands_total"].labels(channel, reason)
        self.set_plan_counts({})
        self.set_partition_counts({})

    def __getitem__(self, name: str) -> Any:
        """The prometheus_client object of a family, by its METRIC_NAMES name."""
        return self._metrics[name]

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        return exposition(self.registry, accept, self.cluster)

    def _replace(self, name: str, values: Mapping[Any, float]) -> None:
        """Set a labelled gauge to exactly these children; children no longer present are removed."""
        gauge = self._metrics[name]
        for labels in self._labelled.get(name, set()) - set(values):
            gauge.remove(*labels)
        for labels, value in values.items():
            gauge.labels(*labels).set(value)
        self._labelled[name] = set(values)

    # --- controller cycle ---------------------------------------------------------------------------

    def observe_cycle(self, seconds: float, ok: bool = True) -> None:
        self._metrics["reassignd_cycle_duration_seconds"].observe(seconds)
        self._metrics["reassignd_cycles_total"].labels("ok" if ok else "error").inc()

    def cluster_call(self, api: str, ok: bool, at: float | None = None) -> None:
        """One admin call (after its retries); `at` is the Unix time of a success."""
        self._metrics["reassignd_cluster_calls_total"].labels(api).inc()
        if ok:
            if at is not None:
                self._metrics["reassignd_cluster_last_success_timestamp_seconds"].set(at)
            else:
                self._metrics["reassignd_cluster_last_success_timestamp_seconds"].set_to_current_time()
        else:
            self._metrics["reassignd_cluster_call_errors_total"].labels(api).inc()

    # --- plans and progress -------------------------------------------------------------------------

    def publish_run(self, records: Mapping[str, PlanSummary], run: RunState | None) -> None:
        """The gauges of one cycle: plans per state, and the running plan's; with no plan running, every
        per-plan gauge is 0 or absent."""
        counts: dict[str, int] = {}
        for record in records.values():
            status = run.status.value if run is not None and record.id == run.plan_id else record.status.value
            counts[status] = counts.get(status, 0) + 1
        self.set_plan_counts(counts)
        execution = run.execution if run is not None else None
        if run is None or execution is None or run.ended:
            self.set_progress(None, 0, 0, 0, None)
            self.set_inflight({}, {}, 0)
            self.set_stalled(0)
            self.set_under_min_isr(0)
            self.set_partition_counts({})
            self.set_throttle_rates({}, {})
            self.set_copy_rates({}, {})
            self.set_foreign_reassignments(0)
            return
        load = execution.load
        self.set_inflight(dict(load.incoming), dict(load.outgoing), load.leader_moves)
        self.set_partition_counts({s.value: n for s, n in execution.counts.items()})
        t = run.progress.tracking
        self.set_progress(run.plan_id, t.total_bytes, t.remaining_bytes, t.moved_bytes, t.eta)
        self.set_stalled(len(t.stalled))
        self.set_under_min_isr(len(run.reading.under_min_isr))
        self.set_foreign_reassignments(execution.counts[Status.EXTERNAL])
        self.set_throttle_rates(*run.throttles.applied_rates())
        self.set_copy_rates(t.seen_in, t.seen_out)
        if run.reading.last_view is not None:
            self.auto_throttle_brokers(run.reading.last_view.brokers)

    def set_plan_counts(self, counts: Mapping[str, int], states: Iterable[str] = PLAN_STATES) -> None:
        """Plans per state; `states` absent from `counts` are exported as 0."""
        self._replace("reassignd_plans", {(s,): 0 for s in states} | {(s,): n for s, n in counts.items()})

    def set_partition_counts(
        self, counts: Mapping[str, int], states: Iterable[str] = PARTITION_STATES
    ) -> None:
        self._replace(
            "reassignd_partitions", {(s,): 0 for s in states} | {(s,): n for s, n in counts.items()}
        )

    def set_progress(
        self,
        plan_id: str | None,
        total_bytes: int,
        remaining_bytes: int,
        moved_bytes: int,
        eta_seconds: float | None,
    ) -> None:
        """Progress of the running plan; `plan_id=None` clears it (no plan running).

        `reassignd_moved_bytes_total` grows by what `moved_bytes` grew since the last call for the same
        plan, so it follows the copies cycle by cycle. The first figure seen for a plan (its start, or a
        restart or failover in its middle) is only the base: what was copied before this process watched
        is not counted again. A figure that falls (a copy started over) is the new base.
        """
        values = {
            "reassignd_plan_total_bytes": total_bytes,
            "reassignd_plan_remaining_bytes": remaining_bytes,
            "reassignd_plan_moved_bytes": moved_bytes,
            "reassignd_plan_eta_seconds": math.nan if eta_seconds is None else eta_seconds,
        }
        for name, value in values.items():
            self._replace(name, {} if plan_id is None else {(plan_id,): value})
        self._current_plan = plan_id
        if plan_id is None:
            self._moved_seen = None
            return
        if self._moved_seen is not None and self._moved_seen[0] == plan_id:
            grown = moved_bytes - self._moved_seen[1]
            if grown > 0:
                self._metrics["reassignd_moved_bytes_total"].inc(grown)
        self._moved_seen = (plan_id, moved_bytes)

    def step_started(self, count: int = 1) -> None:
        self._metrics["reassignd_steps_started_total"].inc(count)

    def step_completed(self, seconds: float) -> None:
        self._metrics["reassignd_steps_completed_total"].inc()
        self._metrics["reassignd_step_duration_seconds"].observe(seconds)

    def set_inflight(
        self, incoming: Mapping[int, int], outgoing: Mapping[int, int], leader_movements: int
    ) -> None:
        per_broker = {(str(b), "incoming"): n for b, n in incoming.items()}
        per_broker |= {(str(b), "outgoing"): n for b, n in outgoing.items()}
        self._replace("reassignd_inflight_replica_movements", per_broker)
        self._metrics["reassignd_inflight_leader_movements"].set(leader_movements)

    # --- throttles and stalls -----------------------------------------------------------------------

    def set_throttle_rates(self, incoming: Mapping[int, float], outgoing: Mapping[int, float]) -> None:
        """Rates reassignd has in force; a broker absent from both has none of ours."""
        rates = {(str(b), "incoming"): r for b, r in incoming.items()}
        rates |= {(str(b), "outgoing"): r for b, r in outgoing.items()}
        self._replace("reassignd_throttle_rate_bytes_per_second", rates)

    def set_copy_rates(self, incoming: Mapping[int, float], outgoing: Mapping[int, float]) -> None:
        """What the copies moved per broker and direction over the progress window, in bytes/s."""
        rates = {(str(b), "incoming"): r for b, r in incoming.items()}
        rates |= {(str(b), "outgoing"): r for b, r in outgoing.items()}
        self._replace("reassignd_reassignment_bytes_per_second", rates)

    def throttle_config_written(self, action: str, count: int = 1) -> None:
        """`action`: set or restored (THROTTLE_ACTIONS)."""
        self._metrics["reassignd_throttle_config_writes_total"].labels(action).inc(count)

    def set_stalled(self, count: int) -> None:
        self._metrics["reassignd_stalled_movements"].set(count)

    def set_under_min_isr(self, count: int) -> None:
        self._metrics["reassignd_under_min_isr_partitions"].set(count)

    def stall_detected(self, count: int = 1) -> None:
        self._metrics["reassignd_stalls_detected_total"].inc(count)

    def auto_throttle_brokers(self, brokers: Iterable[int]) -> None:
        """Brokers auto-throttle may raise (the running plan's): their counters exist from 0."""
        for broker in brokers:
            self._metrics["reassignd_auto_throttle_raises_total"].labels(str(broker))

    def auto_throttle_raised(self, broker: int) -> None:
        self._metrics["reassignd_auto_throttle_raises_total"].labels(str(broker)).inc()

    def set_foreign_reassignments(self, count: int) -> None:
        self._metrics["reassignd_foreign_reassignments"].set(count)

    # --- HA, MQTT, commands, config -----------------------------------------------------------------

    def set_cluster_reachable(self, reachable: bool) -> None:
        self["reassignd_cluster_reachable"].set(1 if reachable else 0)

    def set_store_available(self, available: bool) -> None:
        self["reassignd_store_available"].set(1 if available else 0)

    def set_store_findings(self, count: int) -> None:
        self["reassignd_store_findings"].set(count)

    def set_anomalies(self, counts: Mapping[tuple[str, str], int]) -> None:
        self._replace("reassignd_anomalies", counts)

    def set_writer(self, holding: bool, elsewhere: bool = False) -> None:
        self._metrics["reassignd_cluster_writer"].set(1 if holding else 0)
        self._metrics["reassignd_cluster_writer_elsewhere"].set(1 if elsewhere else 0)

    def set_leader(self, is_leader: bool) -> None:
        self._metrics["reassignd_ha_is_leader"].set(1 if is_leader else 0)

    def mqtt_dropped(self, count: int = 1) -> None:
        self._metrics["reassignd_mqtt_dropped_events_total"].inc(count)

    def command_rejected(self, channel: str, reason: str) -> None:
        self._metrics["reassignd_rejected_commands_total"].labels(channel, reason).inc()

    def config_reloaded(self, ok: bool) -> None:
        self._metrics["reassignd_config_reloads_total"].labels("ok" if ok else "error").inc()
