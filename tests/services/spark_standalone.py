"""A real Spark standalone cluster on loopback: one master and N workers started from the pyspark install
(`spark-class org.apache.spark.deploy.master.Master` / `...deploy.worker.Worker`), each worker with one
core and a little memory, so the planner's executors run in separate JVMs and Python workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.services.procs import free_port, port_open, stop_pid, wait_until


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _environment(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(workdir / "logs"),
            "SPARK_WORKER_DIR": str(workdir / "work"),
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
        }
    )
    return env


@dataclass
class SparkStandalone:
    workdir: Path
    workers: int = 2
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    issued: set[int] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with (self.workdir / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=_environment(self.workdir),
            )
        self.procs.append(proc)
        return proc

    def alive_workers(self) -> int:
        """-1 while the master's UI does not answer its JSON (not yet up, or another process has the port)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as response:
                return int(json.loads(response.read()).get("aliveworkers", 0))
        except (OSError, ValueError):
            return -1

    def _distinct_port(self) -> int:
        """free_port() can hand out a port again until someone binds it: the master's UI port, chosen
        before the master started, must not go to a worker (its UI would answer the master's /json/),
        nor one worker's port to another."""
        while True:
            port = free_port()
            if port not in (self.port, self.ui_port, *self.issued):
                self.issued.add(port)
                return port

    def start(self, timeout: float = 90.0) -> None:
        master = self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        wait_until(lambda: port_open(self.port), timeout, "Spark master", master)
        wait_until(lambda: self.alive_workers() >= 0, timeout, "Spark master's UI", master)
        for i in range(self.workers):
            self._start(
                f"worker-{i}",
                "org.apache.spark.deploy.worker.Worker",
                self.url,
                "--host",
                "127.0.0.1",
                "--port",
                str(self._distinct_port()),
                "--webui-port",
                str(self._distinct_port()),
                "--cores",
                "1",
                "--memory",
                "1g",
            )
        wait_until(lambda: self.alive_workers() >= self.workers, timeout, "Spark workers", master)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            stop_pid(proc)
        self.procs.clear()
