"""Kafka's own reassignment tool (`kafka-reassign-partitions.sh`) as a neighbour of reassignd, run from the
kafka-tools jars `make setup` fetched into .cache/kafka/tools/ (scripts/kafka/tools.pom.xml).

The tests run it against the same real cluster as the daemon (plans it executed, verified or cancelled on
either side); bench/ runs it as the stock peer. Each call is one short JVM: C1 only, the serial collector,
warnings and errors of its own logging on stderr (the admin client's INFO lines would bury its output), and
the class-data archive `make setup` writes (`class-archive` below): measured on a loaded 2-core box, a
`--list` took 1.6 s of CPU without it and 0.7-0.9 s with it.

    tool = ReassignTool(cluster.bootstrap_servers, tmp_path / "tool")
    started = tool.execute(plan, throttle=1_000_000)   # started.rollback: the "Current partition replica
                                                       # assignment" it printed, as a plan document
    tool.verify(plan).stdout                           # "Reassignment of partition t-0 is completed." ...
    tool.cancel(plan); tool.list()
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reassignd.localkafka.cluster import JARS, KafkaCluster, jars

MAIN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
JVM_OPTIONS = ("-Xms32m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData")
LOG4J2 = """status = error
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
"""
ROLLBACK_HEADER = "Current partition replica assignment"


class ToolFailed(RuntimeError):
    """The tool exited non-zero (or printed its own error line, which it does with exit code 1)."""


@dataclass(frozen=True)
class ToolRun:
    """One run of the tool: its arguments, exit code, output and wall time."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def rollback(self) -> dict[str, Any] | None:
        """The pre-plan assignment `--execute` printed (Kafka's reassignment JSON after the header)."""
        lines = self.stdout.splitlines()
        for i, line in enumerate(lines):
            if line.strip() == ROLLBACK_HEADER:
                document = next(x for x in lines[i + 1 :] if x.strip())
                return dict(json.loads(document))
        return None

    def lines(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.strip()]


class ReassignTool:
    """`ReassignPartitionsCommand` against one cluster; plan files are written under `workdir`."""

    def __init__(self, bootstrap: str, workdir: Path, *, timeout: float = 120.0) -> None:
        self.bootstrap = bootstrap
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.timeout = timeout
        self.log_config = self.workdir / "log4j2.properties"
        self.log_config.write_text(LOG4J2)
        self.runs: list[ToolRun] = []

    def command(self, *args: str) -> list[str]:
        return [
            "java",
            *JVM_OPTIONS,
            *_archive_options(),
            f"-Dlog4j2.configurationFile={self.log_config}",
            "-cp",
            f"{jars('tools')}/*",
            MAIN,
            "--bootstrap-server",
            self.bootstrap,
            *args,
        ]

    def run(self, *args: str, check: bool = True) -> ToolRun:
        started = time.monotonic()
        done = subprocess.run(
            self.command(*args),
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        result = ToolRun(args, done.returncode, done.stdout, done.stderr, time.monotonic() - started)
        self.runs.append(result)
        # The tool reports a refused command on stdout ("Error: ..." or a TerseException's text) with exit 1.
        if check and done.returncode != 0:
            raise ToolFailed(f"{MAIN} {' '.join(args)} exited {done.returncode}: {done.stdout}{done.stderr}")
        return result

    def plan_file(self, plan: dict[str, Any], name: str) -> Path:
        path = self.workdir / f"{name}-{len(self.runs)}.json"
        path.write_text(json.dumps(plan))
        return path

    def execute(
        self,
        plan: dict[str, Any],
        *,
        throttle: int | None = None,
        additional: bool = False,
        extra: Sequence[str] = (),
        check: bool = True,
    ) -> ToolRun:
        args = ["--execute", "--reassignment-json-file", str(self.plan_file(plan, "execute"))]
        if throttle is not None:
            args += ["--throttle", str(throttle)]
        if additional:
            args.append("--additional")
        return self.run(*args, *extra, check=check)

    def verify(
        self, plan: dict[str, Any], *, preserve_throttles: bool = False, check: bool = True
    ) -> ToolRun:
        args = ["--verify", "--reassignment-json-file", str(self.plan_file(plan, "verify"))]
        if preserve_throttles:
            args.append("--preserve-throttles")
        return self.run(*args, check=check)

    def cancel(
        self, plan: dict[str, Any], *, preserve_throttles: bool = False, check: bool = True
    ) -> ToolRun:
        args = ["--cancel", "--reassignment-json-file", str(self.plan_file(plan, "cancel"))]
        if preserve_throttles:
            args.append("--preserve-throttles")
        return self.run(*args, check=check)

    def list(self) -> ToolRun:
        return self.run("--list")


ARCHIVE = JARS / "tools.jsa"


def _archive_options() -> list[str]:
    """The class-data archive, when it was made from the jars there now (the JVM would refuse another)."""
    stamp = ARCHIVE.with_suffix(".pom-sha256")
    current = jars("tools") / ".pom-sha256"
    if ARCHIVE.exists() and stamp.exists() and stamp.read_text() == current.read_text():
        return [f"-XX:SharedArchiveFile={ARCHIVE}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    return []


def build_class_archive() -> None:
    """Writes ARCHIVE from one real `--list` against a one-broker KRaft cluster (so the admin client's
    classes are in it); kept while the jars are the same. Idempotent; about 15 s when it runs."""
    if _archive_options():
        return
    stamp = ARCHIVE.with_suffix(".pom-sha256")
    with tempfile.TemporaryDirectory(prefix="kafka-tools-cds-") as tmp:
        workdir = Path(tmp)
        with KafkaCluster(workdir / "kafka", brokers=1) as cluster:
            training = workdir / "tools.jsa"
            tool = ReassignTool(cluster.bootstrap_servers, workdir / "tool")
            command = tool.command("--list")
            command.insert(1, f"-XX:ArchiveClassesAtExit={training}")
            subprocess.run(command, capture_output=True, timeout=120, check=True, stdin=subprocess.DEVNULL)
        if not training.exists():
            raise RuntimeError("the JVM wrote no class archive for Kafka's tools")
        shutil.move(training, ARCHIVE)
    stamp.write_text((jars("tools") / ".pom-sha256").read_text())


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["class-archive"]:
        raise SystemExit("usage: python -m reassignd.localkafka.tools class-archive")
    build_class_archive()
