"""The thread pool the blocking client calls run on, with daemon threads.

concurrent.futures.ThreadPoolExecutor joins its threads at interpreter exit. A call to a cluster that does
not answer blocks its thread for the client's whole timeout (librdkafka's list_topics: 30 s by default, and
longer when every broker is gone), so a daemon asked to stop would wait that out after its work was done.
These threads are daemon threads: a call left in flight by `shutdown(wait=False)` never holds the exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
_Work = tuple[Future[Any], Callable[[], Any]]


class DaemonThreadPool(Executor):
    """At most `max_workers` daemon threads, started as work arrives."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        self._max = max(1, max_workers)
        self._prefix = thread_name_prefix
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._shutdown = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future: Future[T] = Future()
            self._queue.put((future, lambda: fn(*args, **kwargs)))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                thread = threading.Thread(
                    target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
            return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.put(None)  # wakes the next thread, which ends too
                return
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # the caller's to see, as ThreadPoolExecutor hands it over
                    future.set_exception(exc)
            # let go of the call (its arguments) and the future (its result) before waiting for the next:
            # a 100,000-partition read's Metadata answer, sizes and snapshot stayed alive with an idle thread
            del item, future, call
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """As ThreadPoolExecutor's; `wait=False` leaves the calls in flight to end (or not) on their own."""
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            self._queue.put(None)
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()


async def on_own_thread(fn: Callable[[], T], name: str = "reassignd-cluster-close") -> T:
    """`fn()` on a daemon thread of its own that ends with it, awaited without blocking the event loop
    (unlike asyncio.to_thread, no pool thread of the loop's stays behind, and asyncio.run's exit never waits
    for a call still blocked on brokers that do not answer)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            outcome: tuple[T | None, BaseException | None] = (fn(), None)
        except BaseException as exc:  # handed to the awaiting task
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed while fn() was blocked: nobody waits
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future
