"""Issue 31, "the store tells the truth about itself": the store cross-checked against the cluster at start.

A store that silently lost its newest transactions (a restored backup, a store file swapped for an older
copy, a fresh empty state.dir on a host where a plan was running) made the daemon start healthy and idle on
main, leaving its throttles on brokers and topics and its moves half done. Now the writer keeps an ownership
marker in Kafka (the writer group's committed offset; here the simulator's group coordinator, with Kafka's
offset-commit checks); a starting writer whose store is older than the marker holds every write, says what
it found (status, metric, one log line), and `recover --mode cleanup` leaves no move and no throttle."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import structlog

from reassignd.daemon.controller import HELD, Controller
from reassignd.daemon.service import ServiceError
from reassignd.engine import Limits
from reassignd.engine.crosscheck import ClusterSide, Marker, StoreSide, findings
from reassignd.model import TopicPartition
from reassignd.sim.groups import GroupCoordinator
from reassignd.store.aio import AsyncStore
from reassignd.store.base import EventKind, PlanStatus
from reassignd.store.sqlite import SqliteStore
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_failure_paths import MB, daemon

GROUP = "reassignd.sim-cluster"


class SimMarker:
    """The marker port on the simulator's group coordinator: an offset commit with no member and generation
    -1 (the group is Empty: no writer group runs in process), checked as Kafka checks it."""

    def __init__(self) -> None:
        self.coordinator = GroupCoordinator(lambda: 0.0)
        self.writes: list[int] = []

    def write(self, seq: int, text: str) -> None:
        code = self.coordinator.commit_offsets(GROUP, "", -1, {("__consumer_offsets", 0): (seq, text)})
        assert code == 0, code
        self.writes.append(seq)

    def read(self) -> tuple[int, str] | None:
        stored = self.coordinator.fetch_offsets(GROUP).get(("__consumer_offsets", 0))
        return None if stored is None else (stored[0], stored[1] or "")


def _controller(d: InProcessDaemon, store: AsyncStore, marker: SimMarker) -> Controller:
    return Controller(d.admin, store, Limits.from_mapping(d.limits), clock=d.steady, marker=marker)  # type: ignore[arg-type]


def _copy(live: Path, to: Path) -> Path:
    to.mkdir()
    for name in ("reassignd.db", "reassignd.db-wal"):
        if (live / name).exists():
            shutil.copyfile(live / name, to / name)
    return to


async def _mid_plan(tmp_path: Path, marker: SimMarker) -> tuple[InProcessDaemon, Path, str, dict, Path]:
    """A plan moving 3 partitions with throttles on, its store file, and a backup taken before it started."""
    d = daemon([[1, 2, 3], [1, 2, 3], [1, 2, 3]], size=2_000 * MB)
    live = tmp_path / "live"
    live.mkdir()
    d.store = AsyncStore(SqliteStore(live))  # type: ignore[assignment]
    d.controller = _controller(d, d.store, marker)
    before = d.throttle_configs()
    plan_id = await d.submit(plan_of({("t", 0): [4, 2, 3], ("t", 1): [5, 2, 3], ("t", 2): [6, 2, 3]}))
    backup = _copy(live, tmp_path / "backup")  # the plan submitted, not started: an older store
    await d.run(lambda: len(d.reassigning()) >= 2)
    assert d.throttle_configs() != before
    return d, live, plan_id, before, backup


@pytest.mark.parametrize("which", ["empty", "backup"])
async def test_an_older_store_holds_every_write_and_cleanup_leaves_nothing(
    tmp_path: Path, which: str
) -> None:
    marker = SimMarker()
    d, _live, plan_id, before, backup = await _mid_plan(tmp_path, marker)
    assert marker.writes, "the plan's start wrote the marker"
    moving, throttles = d.reassigning(), d.throttle_configs()

    state = backup if which == "backup" else tmp_path / "fresh"
    store = AsyncStore(SqliteStore(state))
    with structlog.testing.capture_logs() as logs:
        controller = _controller(d, store, marker)
        await controller.start()
        assert await controller.cycle() == HELD
    said = [e for e in logs if e["log_level"] == "error"]
    assert len(said) == 1 and "does not explain the cluster" in said[0]["event"], logs
    found = controller.daemon_status()["store"]["findings"]
    assert len(found) == 1
    expected = "an empty store" if which == "empty" else "the store ends at journal entry #"
    assert expected in found[0] and "reassignd recover --mode cleanup" in found[0]
    assert "reassignment(s) in flight" in found[0] and "throttle config(s)" in found[0]
    assert controller.metrics["reassignd_store_findings"]._value.get() == 1

    for _ in range(4):  # held: no step, no throttle restored, no new plan, whatever the cluster does
        await controller.probe()
        assert await controller.cycle() == HELD
        d.sim.advance(1)
    assert d.throttle_configs() == throttles
    assert sorted(d.reassigning()) == sorted(moving)
    with pytest.raises(ServiceError, match="reassignd recover"):
        await controller.submit_plan(plan_of({("t", 0): [1, 2, 3]}))

    with pytest.raises(ServiceError, match="mode: must be 'adopt' or 'cleanup', got 'clean'") as bad:
        await controller.recover({"mode": "clean"})
    assert bad.value.code == "invalid_request" and bad.value.details["field"] == "mode"

    answer = await controller.recover({"mode": "cleanup"})
    assert sorted(answer["cancelled"]) == sorted(f"{tp.topic}-{tp.partition}" for tp in moving)
    assert answer["restored"] and answer["errors"] == []
    assert controller.daemon_status()["store"]["findings"] == []
    assert controller.metrics["reassignd_store_findings"]._value.get() == 0
    journaled = await store.journal(kinds=[EventKind.ERROR])
    assert journaled[-1].data["recovered"] == "cleanup" and journaled[-1].data["cancelled"]

    d.controller, d.store = controller, store  # type: ignore[assignment]
    await d.run(seconds=600)
    assert d.reassigning() == [] and d.throttle_configs() == before
    if which == "backup":  # the store's own copy of the lost plan does not go on
        assert (await store.get_plan(plan_id)).status is PlanStatus.CANCELLED  # type: ignore[union-attr]

    again = _controller(d, store, marker)  # the marker now says what the store says: no hold
    await again.start()
    assert await again.cycle() != HELD and again.findings == ()


async def test_adopt_goes_on_from_the_older_store_and_rewrites_the_marker(tmp_path: Path) -> None:
    marker = SimMarker()
    d, _live, plan_id, before, backup = await _mid_plan(tmp_path, marker)
    store = AsyncStore(SqliteStore(backup))
    controller = _controller(d, store, marker)
    await controller.start()
    assert await controller.cycle() == HELD
    answer = await controller.recover({"mode": "adopt"})
    assert answer["adopted"] == answer["findings"] and len(answer["findings"]) == 1
    d.controller, d.store = controller, store  # type: ignore[assignment]
    await d.run(seconds=7200)
    assert (await store.get_plan(plan_id)).status is PlanStatus.COMPLETED  # type: ignore[union-attr]
    assert d.replicas("t", 0) == [4, 2, 3] and d.throttle_configs() == before


async def test_a_restart_on_its_own_store_is_not_held_and_the_marker_costs_a_write_per_change(
    tmp_path: Path,
) -> None:
    marker = SimMarker()
    d, _live, plan_id, before, _backup = await _mid_plan(tmp_path, marker)
    writes = len(marker.writes)
    for _ in range(10):  # cycles that change no plan state and no throttle original write no marker
        await d.cycle()
    assert len(marker.writes) - writes <= 1
    d.controller = _controller(d, d.store, marker)  # kill -9 and restart on the same store
    await d.controller.start()
    await d.run(seconds=7200)
    assert d.controller.findings == ()
    assert (await d.store.get_plan(plan_id)).status is PlanStatus.COMPLETED  # type: ignore[union-attr]
    assert d.throttle_configs() == before
    assert len(marker.writes) <= 12, marker.writes  # per state change, never per cycle (hundreds ran)

    fresh = _controller(d, AsyncStore(SqliteStore(tmp_path / "replaced-host")), marker)
    await fresh.start()  # the last writer finished cleanly: a new store starts as any new store does
    assert await fresh.cycle() == "idle" and fresh.findings == ()


def test_the_decision_names_what_it_found() -> None:
    marker = Marker(
        seq=40,
        plan="p1",
        state="running",
        written={("broker", "1", "leader.replication.throttled.rate"): None, ("topic", "t", "x"): "0:1"},
    )
    cluster = ClusterSide(
        frozenset({TopicPartition("t", 0), TopicPartition("other", 0)}),
        {("broker", "1", "leader.replication.throttled.rate"): "1000", ("topic", "t", "x"): "0:1,0:4"},
    )
    assert findings(None, StoreSide(0, {}, frozenset()), cluster) == ()
    assert findings(marker, StoreSide(40, {"p1": "running"}, frozenset(marker.written)), cluster) == ()
    (found,) = findings(marker, StoreSide(12, {}, frozenset()), cluster)
    assert "ends at journal entry #12" in found and "reached #40" in found and "plan p1 (running)" in found
    assert "1 reassignment(s) in flight" in found and "(t-0)" in found and "2 throttle config(s)" in found
    ended = Marker(seq=40, plan="p1", state="completed", written=marker.written)
    clean = ClusterSide(frozenset({TopicPartition("other", 0)}), dict(ended.written))
    assert findings(ended, StoreSide(0, {}, frozenset()), clean) == (), "a finished writer, a new store"
    assert findings(ended, StoreSide(3, {"p0": "queued"}, frozenset(), active=True), clean)
    assert findings(ended, StoreSide(0, {}, frozenset()), cluster), "ours still on the cluster"
    (unknown,) = findings(marker, StoreSide(40, {"p1": "running"}, frozenset()), cluster)
    assert "no original in the store" in unknown
    assert Marker.decode(marker.encode()) == marker
    small = Marker.decode(marker.encode(budget=160))
    assert small.partial and len(small.written) < 2


async def test_a_cross_check_that_cannot_read_writes_nothing_and_is_made_again(tmp_path: Path) -> None:
    marker = SimMarker()
    d, _live, _plan_id, _before, backup = await _mid_plan(tmp_path, marker)
    throttles, moving = d.throttle_configs(), d.reassigning()
    read = marker.read

    def unreachable() -> tuple[int, str] | None:
        raise OSError("the coordinator does not answer")

    marker.read = unreachable  # type: ignore[method-assign]
    controller = _controller(d, AsyncStore(SqliteStore(backup)), marker)
    await controller.start()
    assert (await controller.cycle()).startswith("held: the store's cross-check cannot read the cluster")
    with pytest.raises(ServiceError, match="cross-check cannot read") as refused:
        await controller.set_throttles({"leader.reassignment.throttled.rate": 5_000_000})
    assert refused.value.code == "unavailable"
    assert d.throttle_configs() == throttles and sorted(d.reassigning()) == sorted(moving)
    marker.read = read  # type: ignore[method-assign]
    assert await controller.cycle() == HELD  # made again: the older store is found


async def test_cleanup_counts_a_move_that_ended_before_its_cancel_as_done(tmp_path: Path) -> None:
    """A move the cleanup read in flight can end before its cancel arrives (it finished, or someone cancelled
    it): Kafka then answers NO_REASSIGNMENT_IN_PROGRESS, and nothing is left to cancel. Seen on real Kafka in
    a loaded fresh-clone run (tests/realkafka/test_store_crosscheck.py): `recover --mode cleanup` said
    'cleanup incomplete' and exited 2 although nothing moved any more."""
    marker = SimMarker()
    d, _live, _plan_id, before, _backup = await _mid_plan(tmp_path, marker)
    moving = d.reassigning()
    controller = _controller(d, AsyncStore(SqliteStore(tmp_path / "fresh")), marker)
    await controller.start()
    assert await controller.cycle() == HELD
    forward = d.admin.alter_partition_reassignments

    async def ended_first(targets: Any) -> Any:
        for tp in moving:  # each move ends (here: another tool cancels it) just before ours
            d.sim.alter_partition_reassignment(tp.topic, tp.partition, None)
        return await forward(targets)

    d.admin.alter_partition_reassignments = ended_first  # type: ignore[method-assign]
    answer = await controller.recover({"mode": "cleanup"})
    assert answer["errors"] == [], answer
    assert sorted(answer["cancelled"]) == sorted(f"{tp.topic}-{tp.partition}" for tp in moving)
    assert d.reassigning() == [] and d.throttle_configs() == before


async def test_two_recovers_at_once_the_second_is_refused_not_applied(tmp_path: Path) -> None:
    """Two operators answer the same finding at once (one `--mode adopt`, one `--mode cleanup`): the first
    decides, the second waited on the controller's lock and must be told there is nothing left to recover.
    On main it went on with an empty finding list: its cleanup cancelled the plan the adopt had just let go
    on (or its adopt re-recorded the originals cleanup had just put back), and both answered success."""
    import asyncio

    marker = SimMarker()
    d, _live, plan_id, _before, backup = await _mid_plan(tmp_path, marker)
    store = AsyncStore(SqliteStore(backup))
    controller = _controller(d, store, marker)
    await controller.start()
    assert await controller.cycle() == HELD
    first = asyncio.ensure_future(controller.recover({"mode": "adopt"}))
    second = asyncio.ensure_future(controller.recover({"mode": "cleanup"}))
    results = await asyncio.gather(first, second, return_exceptions=True)
    assert isinstance(results[0], dict) and results[0]["mode"] == "adopt"
    assert isinstance(results[1], ServiceError) and results[1].code == "conflict", results[1]
    assert (await store.get_plan(plan_id)).status is not PlanStatus.CANCELLED  # type: ignore[union-attr]
    recovered = [e for e in await store.journal(kinds=[EventKind.ERROR]) if "recovered" in e.data]
    assert [e.data["recovered"] for e in recovered] == ["adopt"]


async def test_recover_refuses_an_unknown_field_and_does_nothing(tmp_path: Path) -> None:
    """The OpenAPI document says RecoverRequest has no other field (additionalProperties: false), as
    every other request refuses unknown fields; on main `{"mode": "cleanup", "dry_run": true}` ran the
    cleanup for real (reproduced on reassignd sim with `{"mode": "adopt", "extra": 1}`)."""
    marker = SimMarker()
    d, _live, _plan_id, _before, backup = await _mid_plan(tmp_path, marker)
    moving, throttles = d.reassigning(), d.throttle_configs()
    controller = _controller(d, AsyncStore(SqliteStore(backup)), marker)
    await controller.start()
    assert await controller.cycle() == HELD
    with pytest.raises(ServiceError, match="dry_run") as refused:
        await controller.recover({"mode": "cleanup", "dry_run": True})
    assert refused.value.code == "invalid_request"
    assert controller.findings and sorted(d.reassigning()) == sorted(moving)
    assert d.throttle_configs() == throttles


async def test_regaining_the_writer_right_while_held_does_not_count_the_finding_twice(tmp_path: Path) -> None:
    """A held daemon that loses the writer right and gets it back (a rebalance, a network blip to the
    coordinator) checks again, as it must; the marker, left as found, gives the same finding. On main it
    was appended again: status listed it twice and `reassignd_store_findings` counted 2, 3, ... with each
    blip (an alert threshold or a dashboard reading the count misled)."""
    marker = SimMarker()
    d, _live, _plan_id, _before, backup = await _mid_plan(tmp_path, marker)
    controller = _controller(d, AsyncStore(SqliteStore(backup)), marker)
    await controller.start()
    assert await controller.cycle() == HELD
    found = controller.daemon_status()["store"]["findings"]
    assert len(found) == 1
    for _ in range(2):
        await controller.writer_changed(False, {"node": "other", "url": "http://other:8080"})
        await controller.writer_changed(True, None)
        assert await controller.cycle() == HELD
    assert controller.daemon_status()["store"]["findings"] == found
    assert controller.metrics["reassignd_store_findings"]._value.get() == 1
