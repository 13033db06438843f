"""Session fixtures that start real services on loopback; each is started only by the tests that need it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.services.mosquitto import MosquittoServer
from tests.services.zookeeper import ZooKeeperServer

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# `make test` draws the same examples every run, so a result is reproducible and CI judges the change, not
# the draw; HYPOTHESIS_PROFILE=explore draws new ones (with --hypothesis-seed to replay one), which is how
# the property and stateful tests go looking for new counterexamples.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with slow tests first (the order is otherwise kept): xdist hands out whole files in this
    order, so the long ones start at once instead of finishing alone at the end of the run."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zookeeper_fresh(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    """A private server for tests that stop and restart it."""
    server = ZooKeeperServer(tmp_path / "zookeeper")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mosquitto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MosquittoServer]:
    server = MosquittoServer(tmp_path_factory.mktemp("mosquitto"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession for the whole run: small shuffles, no UI, loopback only."""
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("reassignd-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(autouse=True)
def _logs_at_info() -> None:
    """Each test starts with the daemon's logging at info: a CLI command run in process (`cli.main`) leaves
    it at its own level (warning), and a later test's capture_logs then saw no info line (test_logs failed
    so in a full run, depending on what ran before it on the worker)."""
    from reassignd import logs

    logs.configure("info", json=True)


@pytest.fixture
def debug_logs() -> Iterator[None]:
    """Debug lines reach structlog's capture_logs (other tests leave the level at info)."""
    from reassignd import logs

    logs.configure("debug", json=True)
    try:
        yield
    finally:
        logs.configure("info", json=True)
