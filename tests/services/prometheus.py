"""A real Prometheus server from Debian's package (`prometheus`), scraping given targets fast, with rules.

with PrometheusServer(workdir, targets=["127.0.0.1:8080"], rule_files=[alerts]) as prom:
    prom.query('up')          # the instant vector, as the HTTP API's `data.result`
    prom.alerts()             # active alerts
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.services.procs import free_port, stop_pid, wait_until


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


@dataclass
class PrometheusServer:
    workdir: Path
    targets: list[str]
    rule_files: list[Path] = field(default_factory=list)
    token_file: Path | None = None
    interval: str = "1s"
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _config(self) -> str:
        auth = (
            f"    authorization:\n      credentials_file: {json.dumps(str(self.token_file))}\n"
            if self.token_file
            else ""
        )
        rules = "".join(f"  - {json.dumps(str(p))}\n" for p in self.rule_files) or "  []\n"
        return (
            f"global:\n  scrape_interval: {self.interval}\n  evaluation_interval: {self.interval}\n"
            f"rule_files:\n{rules}"
            "scrape_configs:\n"
            "  - job_name: reassignd\n"
            f"    scrape_interval: {self.interval}\n"
            f"{auth}"
            f"    static_configs:\n      - targets: {json.dumps(self.targets)}\n"
        )

    def start(self, timeout: float = 30.0) -> PrometheusServer:
        binary = prometheus_binary()
        assert binary is not None, "prometheus is not installed (Debian package `prometheus`)"
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "prometheus.yml"
        config.write_text(self._config())
        with (self.workdir / "prometheus.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={self.workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        wait_until(self._ready, timeout, "Prometheus", self.proc)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params = {"query": expr} | ({"time": repr(at)} if at is not None else {})
        return list(self.api("query", **params)["result"])

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.api("alerts")["alerts"])

    def wait_for(self, what: str, predicate: Any, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.25)
        raise TimeoutError(f"Prometheus: {what} not seen within {timeout}s ({self.log_tail()})")

    def log_tail(self, chars: int = 2000) -> str:
        log = self.workdir / "prometheus.log"
        return log.read_text(errors="replace")[-chars:] if log.exists() else ""

    def stop(self) -> None:
        if self.proc is not None:
            stop_pid(self.proc)
            self.proc = None

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
