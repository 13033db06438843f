"""The collector's schedule around cycles: off during a cycle, survivors frozen after it, cyclic garbage
found by the periodic full pass (and at release)."""

from __future__ import annotations

import asyncio
import gc
import weakref

from reassignd.daemon.collector import Pacer


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _garbage_cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_a_cycle_runs_without_the_collector_and_its_cyclic_garbage_waits_for_the_full_pass() -> None:
    now = [0.0]
    pacer = Pacer(every=300.0, clock=lambda: now[0])
    seen: list[bool] = []

    async def cycle() -> str:
        seen.append(gc.isenabled())
        return "ok"

    paced = pacer.paced(cycle)
    was_enabled = gc.isenabled()
    try:
        gc.enable()
        dead = _garbage_cycle()  # unreachable, but only the collector can free a cycle
        assert asyncio.run(paced()) == "ok"
        assert seen == [False] and gc.isenabled()
        assert gc.get_freeze_count() > 0
        gc.collect()  # an ordinary collection does not look at frozen objects
        assert dead() is not None
        now[0] = 301.0
        asyncio.run(paced())
        assert dead() is None and pacer.full_collections == 1
        late = _garbage_cycle()
        asyncio.run(paced())  # frozen again, until release
        pacer.release()
        assert late() is None and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        if not was_enabled:
            gc.disable()


def test_the_c_heaps_free_pages_are_handed_back_after_each_cycle() -> None:
    handed_back: list[int] = []
    pacer = Pacer(free_pages=lambda: handed_back.append(1))

    async def cycle() -> str:
        assert not handed_back, "not during the cycle"
        return "ok"

    try:
        asyncio.run(pacer.paced(cycle)())
        assert handed_back == [1]
    finally:
        gc.unfreeze()
