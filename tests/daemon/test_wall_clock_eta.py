"""The ETA is wall-clock seconds and the rates are the throttles' unit, against the simulator at a time scale.

The simulator runs its clock faster than the wall clock; its brokers answer the clock and the scale when
asked by name (engine/cluster_clock.py). A daemon that measured on its own clock counted the ETA in
simulated seconds (the scale times too long) and read rates the scale times the throttles. Here the daemon
runs over TCP against `reassignd sim` at a time scale, and the ETA it shows at 10% is held against the
wall time the plan really took from there.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reassignd.demo import drain_plan
from reassignd.engine import Limits
from reassignd.model import snapshot_from_dict
from reassignd.rehearsal import cluster_from_snapshot, rehearse
from tests.rehearsal.test_prediction import LIMITS, drain_scenario
from tests.services.daemon import DaemonProcess
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow

MB = 1_000_000
CYCLE_WALL_SECONDS = 0.25
TARGET_WALL_SECONDS = 20.0


def test_the_eta_at_ten_percent_is_the_wall_time_the_plan_then_takes(tmp_path: Path) -> None:
    limits = Limits.from_mapping(LIMITS)
    with SimProcess(drain_scenario(), tmp_path / "sim", time_scale=0) as sim:
        snapshot = snapshot_from_dict(sim.snapshot())
        plan = drain_plan(snapshot, [8])
        estimate = rehearse(cluster_from_snapshot(snapshot), plan, limits, cycle_interval=5.0)
        scale = float(min(40, max(10, round(estimate.duration_seconds / TARGET_WALL_SECONDS))))
        settings = {
            **LIMITS,
            "controller.cycle.interval.seconds": CYCLE_WALL_SECONDS,
            "controller.cycle.min.interval.seconds": 0.05,
        }
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, settings).start()
        try:
            plan_id = daemon.submit(plan.to_dict())
            sim.set_time_scale(scale)
            at_ten: tuple[float, float] | None = None
            fastest = 0.0
            deadline = time.monotonic() + 6 * estimate.duration_seconds / scale + 30
            state = ""
            while time.monotonic() < deadline:
                status = daemon.status(plan_id)
                state, progress = status["state"], status["progress"]
                if state in ("completed", "failed", "cancelled"):
                    break
                fastest = max(fastest, progress.get("rate_bytes_per_sec") or 0.0)
                if at_ten is None and progress["percent"] >= 10 and progress["eta_seconds"] is not None:
                    at_ten = (time.monotonic(), progress["eta_seconds"])
                time.sleep(0.1)
            ended = time.monotonic()
            assert state == "completed", daemon.log_tail()
        finally:
            daemon.stop()
    assert at_ten is not None
    taken = ended - at_ten[0]
    error = (at_ten[1] - taken) / taken
    print(
        f"at {scale:g}x: ETA at 10% {at_ten[1]:.1f} s, took {taken:.1f} s ({error:+.1%}), "
        f"rate <= {fastest:,.0f} B/s"
    )
    assert abs(error) <= 0.25, (at_ten[1], taken)
    # seven receivers at most, each under its follower throttle: a rate on the daemon's clock read the scale
    # times that
    assert fastest <= 1.5 * 7 * LIMITS["follower.reassignment.throttled.rate"]
