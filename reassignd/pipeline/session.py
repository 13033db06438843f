"""The SparkSession: local[*] by default, any master by argument or REASSIGND_SPARK_MASTER."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

DEFAULT_MASTER = "local[*]"
MASTER_ENV = "REASSIGND_SPARK_MASTER"


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
    )
    if chosen.startswith("local"):
        builder = builder.config("spark.driver.bindAddress", "127.0.0.1").config(
            "spark.driver.host", "127.0.0.1"
        )
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
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(pyspark|pandas)(\.|$)")
        warnings.filterwarnings("ignore", message=r"(?s).*copy keyword is deprecated")
        yield
