"""The planners operators use today, installed for the benchmark only (never runtime dependencies), each in
its own virtualenv under bench/.peers/ (git-ignored), and run the way an operator runs them against a
cluster's ZooKeeper (classic /brokers/ids, /brokers/topics layout), in dry-run mode.

* Yelp kafka-utils 4.1.0, `kafka-cluster-manager`: ignores racks unless given a replication-group parser
  plugin (ours maps a broker to its rack), takes sizes through a partition-measurer plugin (ours reads the
  snapshot's sizes), and proposes one move unless `--max-partition-movements` / `--max-leader-changes` are
  raised (we raise them above any plan's size).
* LinkedIn kafka-tools 0.1.9, `kafka-assigner`: does not declare its `six` dependency (installed beside
  it), its `count` module needs a one-line Python 3 fix (`pcount / n` -> `pcount // n`, applied to the copy
  in its virtualenv only), it insists on finding `kafka-reassign-partitions.sh` and `JAVA_HOME` even for a
  dry run (a stub that refuses to execute is on its PATH), and it reads partition sizes over SSH (`du -sk`
  on each broker): a stub `ssh` on its PATH answers from the snapshot.

Nothing of the peers' code is part of this repository: the virtualenvs are built from PyPI by `make bench`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent / ".peers"
KAFKA_UTILS = "kafka-utils==4.1.0"
KAFKA_TOOLS = "kafka-tools==0.1.9"
JAVA_HOME_CANDIDATES = ("/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/default-java")

GROUP_PARSER = '''
from kafka_utils.kafka_cluster_manager.cluster_info.replication_group_parser import ReplicationGroupParser


class RackParser(ReplicationGroupParser):
    """A broker's replication group is its rack, as Kafka's broker registration states it."""

    def get_replication_group(self, broker):
        return broker.metadata.get("rack")
'''

MEASURER = '''
import json

from kafka_utils.kafka_cluster_manager.cluster_info.partition_measurer import PartitionMeasurer


class SnapshotSizes(PartitionMeasurer):
    """Sizes (bytes) from the benchmark's snapshot: the weight and the cost of moving a partition."""

    def parse_args(self, measurer_args):
        self.sizes = {}
        if measurer_args:
            with open(measurer_args[0]) as f:
                for topic, partition, size in json.load(f):
                    self.sizes[(topic, int(partition))] = float(size)

    def get_weight(self, partition_name):
        return max(self.sizes.get(tuple(partition_name), 1.0), 1.0)

    def get_size(self, partition_name):
        return max(self.sizes.get(tuple(partition_name), 1.0), 1.0)
'''

SSH_STUB = '''#!{python}
"""`ssh HOST du -sk DIR/*` for kafka-assigner's size module, answered from the benchmark's snapshot."""
import json, os, sys

host = sys.argv[1]
with open(os.environ["BENCH_SIZES_BY_HOST"]) as f:
    rows = json.load(f).get(host, [])
sys.stdout.write("".join(f"{{kb}}\\t/data/kafka/{{name}}\\n" for kb, name in rows))
'''

REASSIGN_STUB = """#!/bin/sh
echo "kafka-reassign-partitions.sh stub: the benchmark only generates plans" >&2
exit 1
"""


def java_home() -> str:
    for candidate in (os.environ.get("JAVA_HOME", ""), *JAVA_HOME_CANDIDATES):
        if candidate and Path(candidate, "bin", "java").exists():
            return candidate
    raise RuntimeError("no JDK found for kafka-assigner's JAVA_HOME check")


def _venv(name: str, packages: list[str]) -> Path:
    venv = ROOT / name
    marker = venv / ".installed"
    if marker.exists() and marker.read_text() == " ".join(packages):
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", *packages],
        check=True,
    )
    marker.write_text(" ".join(packages))
    return venv


def _fix_kafka_tools(venv: Path) -> None:
    """kafka-tools 0.1.9's count module divides with / (a float under Python 3): the one-line fix."""
    found = list(venv.glob("lib/python*/site-packages/kafka/tools/assigner/actions/balancemodules/count.py"))
    if not found:
        raise RuntimeError("kafka-tools' count module not found in its virtualenv")
    text = found[0].read_text()
    fixed = text.replace("[pcount / len(self.cluster.brokers),", "[pcount // len(self.cluster.brokers),")
    if fixed == text and "pcount // len" not in text:
        raise RuntimeError("kafka-tools' count module changed: the Python 3 fix does not apply")
    found[0].write_text(fixed)


@dataclass(frozen=True)
class Peers:
    kafka_utils: Path
    kafka_tools: Path
    plugins: Path
    stubs: Path

    def versions(self) -> dict[str, str]:
        return {"kafka-utils": KAFKA_UTILS.split("==")[1], "kafka-tools": KAFKA_TOOLS.split("==")[1]}


def install() -> Peers:
    ROOT.mkdir(exist_ok=True)
    kafka_utils = _venv("kafka-utils", [KAFKA_UTILS])
    kafka_tools = _venv("kafka-tools", [KAFKA_TOOLS, "six"])
    _fix_kafka_tools(kafka_tools)
    plugins = ROOT / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "bench_rack_parser.py").write_text(GROUP_PARSER)
    (plugins / "bench_sizes.py").write_text(MEASURER)
    stubs = ROOT / "stubs"
    stubs.mkdir(exist_ok=True)
    for name, text in (
        ("ssh", SSH_STUB.format(python=sys.executable)),
        ("kafka-reassign-partitions.sh", REASSIGN_STUB),
    ):
        path = stubs / name
        path.write_text(text)
        path.chmod(0o755)
    return Peers(kafka_utils, kafka_tools, plugins, stubs)


@dataclass
class PeerRun:
    tool: str
    seconds: float
    targets: dict[tuple[str, int], list[int]] | None  # the full assignment after the plan
    error: str | None = None


Done = tuple[float, "subprocess.CompletedProcess[str] | None", "str | None"]


def _run(cmd: list[str], env: dict[str, str], timeout: float) -> Done:
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return time.monotonic() - started, None, f"no plan within {timeout:.0f} s"
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return elapsed, done, f"exit {done.returncode}: {' | '.join(tail)}"
    return elapsed, done, None


def run_kafka_utils(
    peers: Peers,
    workdir: Path,
    zk: str,
    command: list[str],
    *,
    sizes_file: Path,
    current: dict[tuple[str, int], list[int]],
    timeout: float,
) -> PeerRun:
    """`kafka-cluster-manager ... --write-to-file plan.json <command>` (the plan lists changed partitions)."""
    discovery = workdir / "discovery"
    discovery.mkdir(parents=True, exist_ok=True)
    (discovery / "bench.yaml").write_text(
        "---\nclusters:\n  bench:\n    broker_list:\n      - '127.0.0.1:9092'\n"
        f"    zookeeper: '{zk}'\nlocal_config:\n  cluster: bench\n"
    )
    plan_file = workdir / "kafka-utils-plan.json"
    plan_file.unlink(missing_ok=True)
    cmd = [
        str(peers.kafka_utils / "bin" / "kafka-cluster-manager"),
        "--cluster-type",
        "bench",
        "--cluster-name",
        "bench",
        "--discovery-base-path",
        str(discovery),
        "--group-parser",
        f"{peers.plugins}:bench_rack_parser",
        "--partition-measurer",
        f"{peers.plugins}:bench_sizes",
        "--measurer-args",
        str(sizes_file),
        "--write-to-file",
        str(plan_file),
        *command,
    ]
    env = dict(os.environ, PYTHONPATH=str(peers.plugins))
    seconds, _, error = _run(cmd, env, timeout)
    if error is not None:
        return PeerRun("kafka-utils", seconds, None, error)
    after = dict(current)
    if plan_file.exists():
        for entry in json.loads(plan_file.read_text()).get("partitions", []):
            after[(str(entry["topic"]), int(entry["partition"]))] = [int(r) for r in entry["replicas"]]
    return PeerRun("kafka-utils", seconds, after)


def run_kafka_tools(
    peers: Peers, zk: str, command: list[str], sizes_by_host: Path, timeout: float
) -> PeerRun:
    """`kafka-assigner -z ZK --generate --output-json <command>`: stdout holds the cluster before/after."""
    cmd = [
        str(peers.kafka_tools / "bin" / "kafka-assigner"),
        "-z",
        zk,
        "--generate",
        "--output-json",
        "--moves",
        "1000000",
        "--skip-ple",
        *command,
    ]
    env = dict(
        os.environ,
        PATH=f"{peers.stubs}:{os.environ.get('PATH', '')}",
        JAVA_HOME=java_home(),
        BENCH_SIZES_BY_HOST=str(sizes_by_host),
    )
    seconds, done, error = _run(cmd, env, timeout)
    if error is not None or done is None:
        return PeerRun("kafka-tools", seconds, None, error)
    text = done.stdout
    start = text.find("{")
    if start < 0:
        return PeerRun("kafka-tools", seconds, None, "no cluster JSON on stdout")
    after = _kafka_tools_assignment(json.loads(text[start:])["after"])
    return PeerRun("kafka-tools", seconds, after)


def _kafka_tools_assignment(cluster: dict[str, Any]) -> dict[tuple[str, int], list[int]]:
    out: dict[tuple[str, int], list[int]] = {}
    for topic, data in cluster["topics"].items():
        for number, entry in data["partitions"].items():
            out[(topic, int(number))] = [int(r) for r in entry["replicas"]]
    return out
