"""The blocking calls' thread pool: daemon threads, so a call stuck on a cluster that does not answer never
holds the process's exit once the adapter is closed without waiting."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import weakref

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


class _Payload:
    """Stands for a cycle's read: a 100,000-partition snapshot, or the Metadata answer it was built from."""


def _built_from(given: _Payload) -> _Payload:
    assert isinstance(given, _Payload)
    return _Payload()


def test_an_idle_thread_holds_nothing_of_its_last_call() -> None:
    """A thread waiting for work kept its last call's arguments and result alive until its next call: the
    last Metadata answer, log-dir sizes and snapshot of a 100,000-partition read (tens of MiB each) outlived
    the cycle that used them, one set per pool thread."""
    pool = DaemonThreadPool(1, thread_name_prefix="t")
    argument = _Payload()
    future = pool.submit(_built_from, argument)
    gone = [weakref.ref(argument), weakref.ref(future.result(5))]
    del argument, future
    deadline = time.monotonic() + 5
    while any(ref() is not None for ref in gone) and time.monotonic() < deadline:
        time.sleep(0.01)  # the thread lets go once its call has returned and it waits again
    assert [ref() for ref in gone] == [None, None]
    pool.shutdown(wait=True)


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
