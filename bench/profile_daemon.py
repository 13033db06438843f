"""Where a large plan's submit and cycles spend their time: `python -m bench.profile_daemon [--million]`.

The same daemon side and simulated cluster as bench_daemon (a 100,000-partition plan on the 100,000- or
the 1,000,000-partition cluster), one phase at a time: submit, first cycle, two steady cycles, one moving
cycle. Each phase prints its wall time, the daemon's and the simulator's CPU, the peak RSS, and every
cluster call the adapter made (count and summed wall time of `ClientCalls._call`, retries included,
timed by wrapping it here: calls run in parallel, so they add up to more than the phase). `--cprofile
DIR` also writes one cProfile file per phase (the event loop's thread only; `py-spy record --threads`
sees the adapter's pool threads too).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_daemon import (
    MILLION,
    MILLION_PLAN,
    _advance,
    _cpu_seconds,
    cluster_scenario,
    daemon_parts,
    move_plan,
    peak_rss_mib,
)
from reassignd import logs
from reassignd.cluster.clients import ClientCalls
from reassignd.daemon.allocator import limit_malloc_arenas
from reassignd.daemon.collector import Pacer, tune_collector
from tests.services.simulator import SimProcess


class CallTimes:
    """Each API's calls through the adapter and their summed wall time."""

    def __init__(self) -> None:
        self.calls: dict[str, list[float]] = defaultdict(list)
        original = ClientCalls._call

        async def timed(client: ClientCalls, api: str, attempt: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(client, api, attempt, **kwargs)
            finally:
                self.calls[api].append(time.perf_counter() - started)

        ClientCalls._call = timed  # type: ignore[method-assign,assignment]

    def taken(self) -> str:
        text = ", ".join(f"{api} {len(t)}x {sum(t):.2f} s" for api, t in sorted(self.calls.items()))
        self.calls.clear()
        return text


async def _phases(sim: SimProcess, plan: Any, workdir: Path, args: Any) -> None:
    assert sim.proc is not None
    sim_pid = sim.pid
    times = CallTimes()
    admin, store, controller = daemon_parts(sim.bootstrap_servers, workdir)
    cycle = Pacer().paced(controller.cycle)

    async def phase(name: str, work: Callable[[], Awaitable[object]]) -> None:
        profile = cProfile.Profile() if args.cprofile else None
        wall, cpu, sim = time.perf_counter(), time.process_time(), _cpu_seconds(sim_pid)
        if profile:
            profile.enable()
        await work()
        if profile:
            profile.disable()
            profile.dump_stats(Path(args.cprofile) / f"{name}.prof")
        daemon_cpu = time.process_time() - cpu
        print(
            f"{name:>8}: {time.perf_counter() - wall:6.2f} s wall, daemon CPU {daemon_cpu:.2f} s,"
            f" simulator CPU {_cpu_seconds(sim_pid) - sim:.2f} s, peak RSS {peak_rss_mib():.0f} MiB\n"
            f"          calls: {times.taken()}",
            flush=True,
        )

    await phase("start", admin.learn_cluster_size)  # as `reassignd run` does
    await phase("submit", lambda: controller.submit_plan(plan))
    await phase("first", cycle)
    await phase("steady", cycle)
    await phase("steady", cycle)
    await asyncio.to_thread(_advance, sim.control_url, 1.0)
    await phase("moving", cycle)
    await admin.close()
    await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_daemon")
    parser.add_argument("--million", action="store_true", help="the 1,000,000-partition cluster")
    parser.add_argument("--cprofile", metavar="DIR", help="write DIR/PHASE.prof for each phase")
    args = parser.parse_args()
    if args.cprofile:
        Path(args.cprofile).mkdir(parents=True, exist_ok=True)
    logs.configure("error", json=True)
    tune_collector()
    limit_malloc_arenas()  # as `reassignd run` does
    brokers, topics, per_topic = MILLION if args.million else (100, 100, 1000)
    scenario = cluster_scenario(brokers, topics, per_topic)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        sim = SimProcess(scenario, Path(tmp) / "sim", time_scale=0).start(timeout=900)
        print(f"simulator of {topics * per_topic:,} partitions up in {time.perf_counter() - started:.0f} s")
        try:
            plan = move_plan(scenario, MILLION_PLAN, brokers)
            asyncio.run(_phases(sim, plan, Path(tmp), args))
        finally:
            sim.stop(timeout=60)


if __name__ == "__main__":
    main()
