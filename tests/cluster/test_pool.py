"""The blocking calls' thread pool: daemon threads, so a call stuck on a cluster that does not answer never
holds the process's exit once the adapter is closed without waiting."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from reassignd.cluster.pool import DaemonThreadPool


def test_it_runs_calls_on_at_most_max_workers_threads_and_hands_over_their_errors() -> None:
    pool = DaemonThreadPool(2, thread_name_prefix="t")
    gate = threading.Event()
    names: set[str] = set()

    def call(n: int) -> int:
        gate.wait(5)
        names.add(threading.current_thread().name)
        return n * 2

    futures = [pool.submit(call, n) for n in range(6)]
    gate.set()
    assert [f.result(5) for f in futures] == [0, 2, 4, 6, 8, 10]
    assert len(names) <= 2
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 // 0).result(5)
    pool.shutdown(wait=True)
    with pytest.raises(RuntimeError):
        pool.submit(int)


def test_shutdown_without_waiting_leaves_a_stuck_call_and_cancels_the_queued_ones() -> None:
    pool = DaemonThreadPool(1, thread_name_prefix="t")
    stuck = threading.Event()
    running = pool.submit(stuck.wait, 30)
    queued = pool.submit(int)
    time.sleep(0.05)
    started = time.monotonic()
    pool.shutdown(wait=False, cancel_futures=True)
    assert time.monotonic() - started < 1 and queued.cancelled() and not running.done()
    stuck.set()
    assert running.result(5) is True


def test_a_stuck_call_does_not_hold_the_exit() -> None:
    code = (
        "import time\n"
        "from reassignd.cluster.pool import DaemonThreadPool\n"
        "pool = DaemonThreadPool(1, thread_name_prefix='t')\n"
        "pool.submit(time.sleep, 60)\n"
        "time.sleep(0.1)\n"
        "pool.shutdown(wait=False)\n"
    )
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
    assert time.monotonic() - started < 10
