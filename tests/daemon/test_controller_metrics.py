"""The metrics a running controller publishes, in process and in virtual time: what the dashboard and the
alerts read while a plan runs and after it ended."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from reassignd.daemon.controller import AutoThrottle
from reassignd.store.base import EventKind, PlanStatus
from tests.daemon.inprocess import InProcessDaemon, plan_of
from tests.daemon.test_e2e import LIMITS, fill_plan, scenario

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(d: InProcessDaemon) -> Series:
    text = d.controller.metrics.exposition()[0].decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def named(series: Series, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: value for (n, labels), value in series.items() if n == name}


def targets(plan: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): e["replicas"] for e in plan["partitions"]}


async def test_bytes_moved_follow_the_copies_every_cycle_and_per_plan_gauges_reset_at_the_end() -> None:
    d = InProcessDaemon(scenario(12), {**LIMITS, "follower.reassignment.throttled.rate": 2_000_000}, 1.0)
    plan_id = await d.submit(plan_of(targets(fill_plan(12))))
    counter: list[float] = []
    finished: list[int] = []
    while await d.status_of(plan_id) is not PlanStatus.COMPLETED:
        await d.cycle()
        series = scrape(d)
        counter.append(series[("reassignd_moved_bytes_total", ())])
        finished.append(len(await d.journal(EventKind.STEP_FINISHED)))
        assert len(counter) < 2000, "plan did not finish"
    grew = [i for i in range(1, len(counter)) if counter[i] > counter[i - 1]]
    grew_without_a_step_finishing = [i for i in grew if finished[i] == finished[i - 1]]
    assert len(grew_without_a_step_finishing) > len(counter) // 2, (
        "the counter must grow while copies run, not only when steps finish"
    )
    final = scrape(d)
    total = sum(e.data["bytes"] for e in await d.journal(EventKind.STEP_FINISHED))
    assert 0.95 * total <= final[("reassignd_moved_bytes_total", ())] <= 1.05 * total
    await d.cycle()  # the cycle after the end publishes an idle daemon
    final = scrape(d)
    assert set(named(final, "reassignd_partitions").values()) == {0}
    for name in (
        "reassignd_plan_total_bytes",
        "reassignd_plan_moved_bytes",
        "reassignd_plan_remaining_bytes",
        "reassignd_plan_eta_seconds",
        "reassignd_throttle_rate_bytes_per_second",
        "reassignd_inflight_replica_movements",
    ):
        assert named(final, name) == {}, name
    for name in ("reassignd_stalled_movements", "reassignd_foreign_reassignments"):
        assert final[(name, ())] == 0
    assert final[("reassignd_plans", (("state", "completed"),))] == 1
    assert final[("reassignd_plans", (("state", "running"),))] == 0
    writes = named(final, "reassignd_throttle_config_writes_total")
    assert writes[(("action", "set"),)] > 0 and writes[(("action", "restored"),)] > 0
    journal = await d.journal(EventKind.THROTTLE_SET, EventKind.THROTTLE_RESTORED)
    assert sum(writes.values()) == len([e for e in journal if "op" in e.data])


async def test_auto_throttle_counters_exist_for_the_clusters_brokers_before_any_raise() -> None:
    d = InProcessDaemon(scenario(6), LIMITS, 1.0, auto_throttle=AutoThrottle(1_000_000, 100_000_000))
    await d.submit(plan_of(targets(fill_plan(6))))
    await d.cycle()
    raises = named(scrape(d), "reassignd_auto_throttle_raises_total")
    assert raises == {(("broker", str(b)),): 0 for b in range(1, 7)}


async def test_a_finished_plan_keeps_its_brokers_and_the_throttles_applied() -> None:
    limits = {**LIMITS, "follower.reassignment.throttled.rate": 2_000_000}
    d = InProcessDaemon(scenario(6), limits, 1.0)
    plan = targets(fill_plan(6))
    plan_id = await d.submit(plan_of(plan))
    await d.run(seconds=7200)
    d.crash()  # what a restarted daemon shows: the stored summary
    await d.controller.start()
    outcome = d.controller.plan_status(plan_id)["progress"]["outcome"]
    gained = {b: sum(1 for tp, r in plan.items() if b in r and b >= 4) for b in (4, 5, 6)}
    brokers = {row["broker"]: row for row in outcome["brokers"]}
    assert {b: brokers[b]["replicas_in"] for b in (4, 5, 6)} == gained
    assert sum(row["replicas_out"] for row in brokers.values()) == sum(gained.values())
    assert all(brokers[b]["bytes_in"] == 10_000_000 * gained[b] for b in (4, 5, 6))
    followers = {b: outcome["throttles"][str(b)]["follower"] for b in (4, 5, 6)}
    # broker 5 has the operator's own 30 MB/s (scenario): ours added to it (KIP-542, policy add)
    assert followers == {4: 2e6, 5: 32e6, 6: 2e6}


async def test_copy_rates_per_broker_follow_the_copies_and_stay_under_their_throttle() -> None:
    """Receiving brokers (4-6) show incoming copy traffic, the copies' leaders outgoing; a broker's copies
    run about at its follower rate (the binding one here: Kafka's quota window lets a little more through
    while it fills, and producers keep writing into the copied partitions), and the series go when the plan
    ends."""
    rate = 2_000_000
    d = InProcessDaemon(scenario(12), {**LIMITS, "follower.reassignment.throttled.rate": rate}, 1.0)
    plan_id = await d.submit(plan_of(targets(fill_plan(12))))
    seen: dict[tuple[str, str], float] = {}
    while await d.status_of(plan_id) is not PlanStatus.COMPLETED:
        await d.cycle()
        for labels, value in named(scrape(d), "reassignd_reassignment_bytes_per_second").items():
            key = (dict(labels)["broker"], dict(labels)["direction"])
            seen[key] = max(seen.get(key, 0.0), value)
    incoming = {b: v for (b, direction), v in seen.items() if direction == "incoming"}
    outgoing = {b: v for (b, direction), v in seen.items() if direction == "outgoing"}
    assert incoming and set(incoming) <= {"4", "5", "6"}, seen
    assert outgoing and all(v > 0 for v in seen.values()), seen
    assert max(incoming.values()) <= 1.25 * rate, seen
    await d.cycle()
    assert named(scrape(d), "reassignd_reassignment_bytes_per_second") == {}
