"""`reassignd demo --kafka` as a user runs it: a real cluster, a drain under a producer, judged and
stopped."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reassignd.demo_kafka import MIB, KafkaDemoOptions, run_kafka_demo
from tests.demo.test_demo import _alive

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def test_the_kafka_demo_drains_a_broker_judges_the_cluster_and_stops_what_it_started() -> None:
    out = io.StringIO()
    options = KafkaDemoOptions(partitions=4, partition_bytes=2 * MIB, rate=4_000_000)
    code = run_kafka_demo(options, out)
    text = out.getvalue()
    assert code == 0, text
    assert "completed" in text and "3/3 done" in text, text
    assert "every replica list is the plan's, leaders preferred, throttles as before" in text
    assert re.search(r"producer: [1-9]\d* records acknowledged, .* 0 errors", text), text
    pids = [int(p) for p in re.findall(r"=(\d+)", text.split("JVM pids (node=pid):")[1].splitlines()[0])]
    pids += [int(p) for p in re.findall(r"daemon: API \S+, pid (\d+)", text)]
    assert len(pids) == 6 and not any(_alive(pid) for pid in pids), pids
    workdir = re.search(r"files in (\S+)", text)
    assert workdir and not Path(workdir.group(1)).exists()


def test_without_kafkas_jars_the_demo_says_how_to_get_them_and_starts_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "REASSIGND_KAFKA_JARS": str(tmp_path / "none")}
    proc = subprocess.run(
        [sys.executable, "-m", "reassignd", "demo", "--kafka"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"reassignd demo: Kafka jars not fetched: {tmp_path / 'none' / 'kraft'} is missing; run `make setup`"
    ]
    assert proc.stdout == ""
