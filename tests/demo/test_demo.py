"""`reassignd demo` as a user runs it: to completion (exit 0), and interrupted with Ctrl-C (exit 130)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reassignd.demo import DEMO_SCENARIO, drain_plan
from reassignd.placement.topology import Topology
from reassignd.sim import SimCluster, load_scenario

pytestmark = pytest.mark.slow


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it is gone for our purposes once its parent reaped it
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _pids(output: str) -> list[int]:
    return [int(p) for p in re.findall(r"(?:simulator|daemon) pid (\d+)", output)]


def test_the_demo_runs_to_completion_and_stops_what_it_started() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "reassignd", "demo", "--seconds", "25"],
        capture_output=True,
        check=False,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "completed" in out and "23/23 done" in out
    assert re.search(r"metrics http://127\.0\.0\.1:\d+/metrics", out)
    done = re.search(r"done: .* of cluster time, rehearsal predicted .* \(([+-]\d+\.\d)%\)", out)
    assert done, out[-2000:]
    # played in 25 s (a time scale near 8x), the rehearsal's whole cycles are several cluster seconds while
    # the daemon wakes on events: measured -9.3% to -9.6% quiet (also at this stop's first commit), -10.4%
    # at a load of 7; the default-length demo is within 5%
    assert abs(float(done.group(1))) <= 12.0
    pids = _pids(out)
    assert len(pids) == 2
    assert not any(_alive(pid) for pid in pids)
    workdir = re.search(r"files in (\S+)\)", out)
    assert workdir and not Path(workdir.group(1)).exists()


@pytest.mark.parametrize(
    "sig", [signal.SIGINT, signal.SIGHUP, signal.SIGTERM], ids=["ctrl-c", "hangup", "term"]
)
def test_ctrl_c_stops_the_simulator_and_the_daemon_and_exits_130(sig: signal.Signals) -> None:
    """Ctrl-C, a closed terminal or a kill: whatever stops the demo stops what it started."""
    # As a terminal starts it: a runner started in the background (`make test &`) ignores SIGINT, a child
    # inherits an ignored signal, and Python then leaves Ctrl-C ignored (the test hung 60 s in such a run).
    # A handled signal is reset to its default across exec.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "reassignd", "demo", "--seconds", "120"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    with proc:  # closes its pipe however the test ends (a pipe left open fails a later test)
        assert proc.stdout is not None
        seen = []
        deadline = time.monotonic() + 90
        try:
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                seen.append(line)
                if "running:" in line:
                    break
            assert any("running:" in line for line in seen), "".join(seen)
            proc.send_signal(sig)
            rest, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    output = "".join(seen) + rest
    assert proc.returncode == 130, output[-2000:]
    assert "interrupted" in output
    pids = _pids(output)
    assert len(pids) == 2
    assert not any(_alive(pid) for pid in pids)


def test_the_shipped_scenario_spans_two_data_centres_and_its_drain_keeps_rack_spread() -> None:
    sim = SimCluster.from_scenario(load_scenario(DEMO_SCENARIO))
    snapshot = sim.to_snapshot()
    racks = {b.rack for b in snapshot.brokers.values()}
    assert len({r.split("/")[1] for r in racks if r}) >= 2 and len(racks) >= 4
    plan = drain_plan(snapshot, [12])
    topology = Topology.from_brokers(b for b in snapshot.brokers.values() if b.id != 12)
    assert plan.targets and all(12 not in t for t in plan.targets.values())
    for tp, target in plan.targets.items():
        before = snapshot.partitions[tp].replicas
        assert len(target) == len(before)
        dcs_before = {str(snapshot.brokers[b].rack).split("/")[1] for b in before if b != 12}
        dcs_after = {str(snapshot.brokers[b].rack).split("/")[1] for b in target}
        assert dcs_before <= dcs_after
        assert all(b in topology for b in target)
