"""`reassignd sim` as a subprocess, for tests that talk to it through real Kafka clients.

librdkafka aborts the whole process on some protocol errors, so the simulator always runs in its own process.
Usage:

    with SimProcess(scenario_dict_or_path, workdir=tmp_path, time_scale=0) as sim:
        AdminClient({"bootstrap.servers": sim.bootstrap_servers})
        sim.stop_broker(2); sim.advance(30); sim.state()
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.services.procs import stop_pid

BOOTSTRAP_PREFIX = "bootstrap.servers="
CONTROL_PREFIX = "control="


class ControlRequestError(RuntimeError):
    """The control API answered with an error status; `body` is its JSON error."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


class SimProcess:
    """One `reassignd sim` process; stop() (or leaving the `with`) ends it by its PID."""

    def __init__(
        self,
        scenario: str | Path | dict[str, Any],
        workdir: Path,
        time_scale: float = 1.0,
        seed: int | None = None,
        extra_args: list[str] | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        if isinstance(scenario, dict):
            path = self.workdir / "scenario.json"
            path.write_text(json.dumps(scenario), encoding="utf-8")
            self.scenario_path = path
        else:
            self.scenario_path = Path(scenario)
        self.time_scale = time_scale
        self.seed = seed
        self.extra_args = list(extra_args or [])
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready_lines: list[str] = []
        self.bootstrap_servers = ""
        self.control_url = ""
        self.log_path = self.workdir / "sim.log"
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "reassignd", "--log-format", "json", "sim"]
        cmd += ["--scenario", str(self.scenario_path), "--time-scale", repr(float(self.time_scale))]
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        return cmd + self.extra_args

    def start(self, timeout: float = 30.0) -> SimProcess:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.command(), stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env
            )
        self._reader = threading.Thread(target=self._read_stdout, name="sim-stdout", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while len(self.ready_lines) < 2:
            remaining = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(0.0, remaining))
            except queue.Empty:
                self.stop()
                raise TimeoutError(f"simulator not ready after {timeout}s; log: {self._log_tail()}") from None
            if line is None:
                code = self.proc.wait()
                raise RuntimeError(
                    f"simulator exited with code {code} before it was ready: {self._log_tail()}"
                )
            self.ready_lines.append(line)
        bootstrap, control = self.ready_lines
        if not bootstrap.startswith(BOOTSTRAP_PREFIX) or not control.startswith(CONTROL_PREFIX):
            self.stop()
            raise RuntimeError(f"unexpected ready lines: {self.ready_lines!r}")
        self.bootstrap_servers = bootstrap[len(BOOTSTRAP_PREFIX) :]
        self.control_url = control[len(CONTROL_PREFIX) :]
        return self

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (then SIGKILL) exactly our process; returns its exit code."""
        if self.proc is None:
            return None
        stop_pid(self.proc, timeout)
        if self._reader is not None:
            self._reader.join(timeout)  # EOF once the process is gone
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode

    def __enter__(self) -> SimProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def later_stdout(self) -> list[str]:
        """Lines printed after the two ready lines (there should be none); complete once stopped."""
        lines = []
        while not self._lines.empty():
            line = self._lines.get_nowait()
            if line is not None:
                lines.append(line)
        return lines

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("the simulator has not been started")
        return self.proc.pid

    @property
    def broker_ports(self) -> dict[int, int]:
        """Listener port per broker id, from the control API (the bootstrap list is in broker id order)."""
        return {int(k): int(v) for k, v in self.state()["listeners"].items()}

    def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self._lines.put(None)

    def _log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    # -- control API -----------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.control_url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                payload: Any = json.loads(raw)
            except ValueError:
                payload = raw.decode("utf-8", "replace")
            raise ControlRequestError(exc.code, payload) from None

    def state(self) -> dict[str, Any]:
        return dict(self.request("GET", "/state"))

    def snapshot(self) -> dict[str, Any]:
        return dict(self.request("GET", "/snapshot"))

    def write_requests(self) -> list[dict[str, Any]]:
        """The simulator's request log of writes: time received, API, client.id, broker."""
        return list(self.request("GET", "/requests")["requests"])

    def stop_broker(self, broker_id: int) -> Any:
        return self.request("POST", f"/brokers/{broker_id}/stop")

    def start_broker(self, broker_id: int) -> Any:
        return self.request("POST", f"/brokers/{broker_id}/start")

    def produce(self, topic: str, bytes_per_sec: float, partition: int | None = None) -> Any:
        body: dict[str, Any] = {"topic": topic, "bytes_per_sec": bytes_per_sec}
        if partition is not None:
            body["partition"] = partition
        return self.request("POST", "/produce", body)

    def set_time_scale(self, scale: float) -> Any:
        return self.request("POST", "/time-scale", {"scale": scale})

    def advance(self, seconds: float) -> Any:
        return self.request("POST", "/advance", {"seconds": seconds})
