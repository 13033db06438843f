"""The SparkSession: local[*] by default, any master by argument or REASSIGND_SPARK_MASTER.

Quiet by construction: the JVM's own output (the JDK's incubator-module warning, log4j's banner, the
NativeCodeLoader warning, console progress bars, executor and Python-worker stderr) goes to a log file,
REASSIGND_SPARK_LOG or `<tmp>/reassignd-spark-<uid>.log`, and a failed job still raises with the cause.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

DEFAULT_MASTER = "local[*]"
MASTER_ENV = "REASSIGND_SPARK_MASTER"
LOG_ENV = "REASSIGND_SPARK_LOG"


def spark_log_path() -> Path:
    configured = os.environ.get(LOG_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"reassignd-spark-{os.getuid()}.log"


@contextmanager
def _jvm_output_to_log() -> Iterator[None]:
    """The JVM inherits this process's stdout and stderr when it starts: point both at the log file for
    that moment only, so everything the JVM (and its Python workers) print later lands there."""
    path = spark_log_path()
    try:
        log = path.open("ab")
    except OSError:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        log.close()


def spark_session(master: str | None = None, app_name: str = "reassignd-planner") -> Any:
    """Reuse the active session (tests, notebooks) or start one bound to loopback in local mode."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    chosen = master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER
    builder = (
        SparkSession.builder.master(chosen)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.memory", os.environ.get("REASSIGND_SPARK_DRIVER_MEMORY", "4g"))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if chosen.startswith("local"):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
    with _jvm_output_to_log(), quiet_pandas_bridge():
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def size_shuffles(spark: Any, rows: int) -> int:
    """About 250k rows per shuffle partition, at least one per core, at most 400."""
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    partitions = max(cores, min(400, rows // 250_000 + 1))
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    return partitions


@contextmanager
def quiet_pandas_bridge() -> Iterator[None]:
    """PySpark 4.3 warns that it does not fully support pandas 3 and trips pandas 3 deprecations inside its
    own Arrow conversion; neither is actionable here, and under warnings-as-errors they abort the job."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark(\.|$)")
        warnings.filterwarnings("ignore", message=r"PySpark does not yet fully support pandas")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(pyspark|pandas)(\.|$)")
        warnings.filterwarnings("ignore", message=r"(?s).*copy keyword is deprecated")
        yield
