"""The writer group's transport against brokers that do not answer: a client that is still bootstrapping
must hold neither close() nor the daemon's stop (issue 27's "stops promptly"; a fresh-clone run of
tests/realkafka/test_unreachable.py waited 30 s for it)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from reassignd.cluster.group import GroupTransport
from reassignd.daemon.writer import WriterLease


@pytest.fixture
def silent_broker() -> Iterator[str]:
    """A listener that accepts connections and never answers (a broker hung, or a black-holed route)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for conn in accepted:
        conn.close()
    server.close()


def transport_to(bootstrap: str) -> GroupTransport:
    return GroupTransport(
        {"bootstrap_servers": [bootstrap], "request_timeout_ms": 20_000, "bootstrap_timeout_ms": 20_000}
    )


def test_close_does_not_wait_for_a_client_still_bootstrapping(silent_broker: str) -> None:
    transport = transport_to(silent_broker)
    failed: list[BaseException] = []

    def find() -> None:
        try:
            transport.find_coordinator("reassignd.x", 20)
        except BaseException as exc:  # what the sender sees once the transport is closed
            failed.append(exc)

    sender = threading.Thread(target=find, daemon=True)
    sender.start()
    time.sleep(0.5)  # the client is now connecting, under its 20 s bootstrap timeout
    started = time.monotonic()
    transport.close()
    assert time.monotonic() - started < 2.0
    sender.join(30)
    assert failed, "a request in flight when the transport closed must not succeed"


def test_a_writer_stopped_while_a_request_hangs_stops_at_once(silent_broker: str) -> None:
    async def scenario() -> float:
        group = WriterLease(transport_to(silent_broker), "n1", session_seconds=10.0, cluster_id=_cluster_id)
        runner = asyncio.create_task(group.run(_ignore, "http://127.0.0.1:1"))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
        return time.monotonic() - started

    started = time.monotonic()
    stopped_in = asyncio.run(scenario())
    assert stopped_in < 2.0
    # asyncio.run's exit joins the loop's default executor: no blocking call may be left on it
    assert time.monotonic() - started < 5.0


async def _cluster_id() -> str:
    return "x"


async def _ignore(*_: object) -> None:
    return None
