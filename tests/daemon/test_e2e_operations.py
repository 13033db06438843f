"""Running the daemon as an operator does: the CLI against the real daemon, SIGHUP reloads, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.daemon.test_e2e import LIMITS, assignment, fill_plan, scenario
from tests.services.daemon import DaemonProcess, plan_targets
from tests.services.simulator import SimProcess

pytestmark = pytest.mark.slow


def test_cli_drives_a_plan_to_completion(tmp_path: Path) -> None:
    with SimProcess(scenario(10), tmp_path / "sim", time_scale=10) as sim:
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, LIMITS).start()
        try:
            plan_file = tmp_path / "plan.json"
            plan = fill_plan(10)
            plan_file.write_text(json.dumps(plan))
            dry = daemon.cli("submit", str(plan_file), "--dry-run", "--json")
            assert dry.returncode == 0, dry.stderr
            assert json.loads(dry.stdout)["state"] == "dry_run"
            submitted = daemon.cli("submit", str(plan_file), "--json")
            assert submitted.returncode == 0, submitted.stderr
            plan_id = json.loads(submitted.stdout)["plan_id"]
            watched = daemon.cli("status", plan_id, "--watch", "--interval", "0.3", timeout=120)
            assert watched.returncode == 0, watched.stderr + watched.stdout
            assert "completed" in watched.stdout
            expected = plan_targets(plan)
            actual = assignment(sim.state())
            assert {tp: actual[tp] for tp in expected} == expected
            plans = daemon.cli("plans", "--json")
            assert plans.returncode == 0 and plan_id in plans.stdout
            wrong = tmp_path / "wrong-token"
            wrong.write_text("not-the-token-0123456789")
            unauthorised = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "reassignd",
                    "pause",
                    "--api",
                    daemon.url,
                    "--token-file",
                    str(wrong),
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert unauthorised.returncode == 2 and "unauthorized" in unauthorised.stderr
        finally:
            daemon.stop()


def test_sighup_reloads_valid_config_and_keeps_the_old_one_on_error(tmp_path: Path) -> None:
    with SimProcess(scenario(5), tmp_path / "sim") as sim:
        daemon = DaemonProcess(tmp_path / "daemon", sim.bootstrap_servers, LIMITS).start()
        try:
            assert daemon.proc is not None
            incoming = "reassignment.max.incoming.replica.movements.per.broker"
            code, body = daemon.request("PATCH", "/v1/limits", {incoming: 1})
            assert code == 200, body
            daemon.settings["reassignment.parallel.replica.count"] = 3
            daemon.write_config()
            os.kill(daemon.proc.pid, signal.SIGHUP)
            deadline = time.monotonic() + 10
            while daemon.request("GET", "/v1/limits")[1]["reassignment.parallel.replica.count"] != 3:
                assert time.monotonic() < deadline, daemon.log_tail()
                time.sleep(0.1)
            assert daemon.request("GET", "/v1/limits")[1][incoming] == 1, "an unrelated reload keeps it"
            assert "runtime setting kept" in daemon.log_tail(20000)
            reloaded = [
                json.loads(line)
                for line in daemon.log_tail(50_000).splitlines()
                if '"config reloaded' in line
            ]
            assert reloaded and reloaded[-1]["changes"] == {"reassignment.parallel.replica.count": "1 -> 3"}
            daemon.config_path.write_text(
                daemon.config_path.read_text() + "reassignment.parallel.replica.count = -4\n"
            )
            os.kill(daemon.proc.pid, signal.SIGHUP)
            time.sleep(1.0)
            assert daemon.request("GET", "/v1/limits")[1]["reassignment.parallel.replica.count"] == 3
            assert "config reload rejected" in daemon.log_tail(20000)
            assert daemon.proc.poll() is None
            assert daemon.terminate() == 0, "SIGTERM stops gracefully with exit 0"
        finally:
            daemon.stop()
