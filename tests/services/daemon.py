"""`reassignd run` as a subprocess, for end-to-end tests that kill, restart and observe it from outside."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from reassignd.config.reference import toml_value
from tests.services.procs import free_port, stop_pid

TOKEN = "test-token-0123456789abcdef0123456789"


def plan_targets(plan: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    """A plan document's target replicas by (topic, partition)."""
    return {(e["topic"], e["partition"]): e["replicas"] for e in plan["partitions"]}


class DaemonProcess:
    """One daemon with its own state dir and API port; the config is written from flat dotted keys."""

    def __init__(self, workdir: Path, bootstrap_servers: str, settings: dict[str, Any] | None = None) -> None:
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.token_file = workdir / "token"
        self.token_file.write_text(TOKEN)
        self.token_file.chmod(0o600)
        self.state_dir = workdir / "state"
        self.settings = {
            "cluster.bootstrap.servers": bootstrap_servers,
            "api.listen": f"127.0.0.1:{self.port}",
            "api.token.file": str(self.token_file),
            "state.dir": str(self.state_dir),
            "controller.cycle.interval.seconds": 0.2,
            "controller.cycle.min.interval.seconds": 0.05,
            "log.level": "info",
            "log.format": "json",
            **(settings or {}),
        }
        self.config_path = workdir / "reassignd.toml"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "daemon.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self) -> None:
        self.config_path.write_text("".join(f"{k} = {toml_value(v)}\n" for k, v in self.settings.items()))

    def start(self, failpoints: str | None = None, timeout: float = 30.0) -> DaemonProcess:
        self.write_config()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("REASSIGND_FAILPOINTS", None)
        if failpoints:
            env["REASSIGND_FAILPOINTS"] = failpoints
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "reassignd", "run", "--config", str(self.config_path)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                if self.request("GET", "/healthz")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"daemon not healthy after {timeout}s: {self.log_tail()}")

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def log_records(self, *levels: str) -> list[dict[str, Any]]:
        """The daemon's JSON log lines at the given levels (all when none is named)."""
        records = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                if not levels or record.get("level") in levels:
                    records.append(record)
        return records

    def request(
        self, method: str, path: str, body: Any = None, token: str | None = TOKEN, timeout: float = 30.0
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw and raw[:1] in b"{[" else raw
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw[:1] in b"{[" else raw

    def submit(self, plan: dict[str, Any]) -> str:
        """POST a plan that must be accepted; its id."""
        code, body = self.request("POST", "/v1/plans", plan)
        assert code == 201, body
        return str(body["plan_id"])

    def status(self, plan_id: str | None = None) -> dict[str, Any]:
        code, body = self.request("GET", f"/v1/plans/{plan_id}" if plan_id else "/v1/status")
        assert code == 200, body
        return dict(body)

    def wait_for_state(self, plan_id: str, states: set[str], timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"daemon died ({self.proc.returncode}): {self.log_tail()}")
            status = self.status(plan_id)
            if status["state"] in states:
                return status
            time.sleep(0.2)
        raise TimeoutError(f"plan {plan_id} still {status.get('state')} after {timeout}s: {status}")

    def cli(self, *args: str, timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`reassignd ARGS` against this daemon's API, as an operator runs it; `check`: raises on a non-zero
        exit."""
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "reassignd",
                *args,
                "--api",
                self.url,
                "--token-file",
                str(self.token_file),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"reassignd {' '.join(args)} exited {done.returncode}: {done.stderr}{done.stdout}"
            )
        return done

    def wait_exit(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def terminate(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        os.kill(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout=60)

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None:
            stop_pid(self.proc)
