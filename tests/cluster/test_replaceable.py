"""The replaceable kafka-python client: one bootstrap at a time, a stale client replaced only once, and a
close that never waits for a bootstrap (the writer group's stop waited 30 s for one)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from reassignd.cluster.replaceable import ReplaceableClient


class Closed(Exception):
    pass


class FakeClient:
    made: list[FakeClient] = []
    gate = threading.Event()

    def __init__(self, **config: Any) -> None:
        self.config = config
        self.closed = False
        FakeClient.gate.wait(10)  # a bootstrap that takes until the test lets it end
        FakeClient.made.append(self)

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def fresh_fakes() -> None:
    FakeClient.made = []
    FakeClient.gate.set()


def replaceable(**kwargs: Any) -> ReplaceableClient:
    return ReplaceableClient({"bootstrap_servers": ["x:1"]}, FakeClient, Closed, **kwargs)


def test_the_client_is_made_once_and_seen_by_on_new_first() -> None:
    seen: list[Any] = []
    clients = replaceable(on_new=seen.append)
    first = clients.get()
    assert clients.get() is first and seen == [first] and first.config == {"bootstrap_servers": ["x:1"]}


def test_a_stale_client_is_replaced_once_whoever_reports_it() -> None:
    clients = replaceable()
    stale = clients.get()
    assert clients.discard(stale) is True and stale.closed
    fresh = clients.get()
    assert clients.discard(stale) is False  # a second report of the same failure
    assert clients.get() is fresh and not fresh.closed


def test_concurrent_callers_share_one_bootstrap() -> None:
    FakeClient.gate.clear()
    clients = replaceable()
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(clients.get())) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)
    FakeClient.gate.set()
    for thread in threads:
        thread.join(5)
    assert len(FakeClient.made) == 1 and got == FakeClient.made * 4


def test_close_does_not_wait_for_a_bootstrap_and_the_late_client_is_closed() -> None:
    FakeClient.gate.clear()
    clients = replaceable()
    outcome: list[BaseException] = []

    def get() -> None:
        try:
            clients.get()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=get)
    thread.start()
    time.sleep(0.2)
    started = time.monotonic()
    assert clients.close() is None
    assert time.monotonic() - started < 0.5
    FakeClient.gate.set()
    thread.join(5)
    assert [type(e) for e in outcome] == [Closed] and FakeClient.made[0].closed
    with pytest.raises(Closed):
        clients.get()
