"""`make_store`, parametrised over the StateStore implementations the contract runs against.

The ZooKeeper store (HA issue) adds itself to IMPLEMENTATIONS with `marks=pytest.mark.zookeeper`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reassignd.store import Fence, SqliteStore, StateStore


def _sqlite(tmp_path: Path, request: pytest.FixtureRequest) -> Callable[..., StateStore]:
    def make(fence: Fence | None = None, clock: Callable[[], float] = time.time) -> StateStore:
        return SqliteStore(tmp_path / "state.db", fence=fence, clock=clock)

    return make


def _zookeeper(tmp_path: Path, request: pytest.FixtureRequest) -> Callable[..., StateStore]:
    from kazoo.client import KazooClient

    from reassignd.store.zookeeper import ZooKeeperStore

    server = request.getfixturevalue("zookeeper")
    root = f"/contract/{uuid.uuid4().hex}"

    def make(fence: Fence | None = None, clock: Callable[[], float] = time.time) -> StateStore:
        client = KazooClient(hosts=server.hosts, timeout=10.0)
        client.start(timeout=15)
        return ZooKeeperStore(client, root, fence=fence, clock=clock, owns_client=True)

    return make


IMPLEMENTATIONS: list[Any] = [
    pytest.param(_sqlite, id="sqlite"),
    pytest.param(_zookeeper, id="zookeeper", marks=pytest.mark.zookeeper),
]


@pytest.fixture(params=IMPLEMENTATIONS)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., StateStore]]:
    opened: list[StateStore] = []
    factory = request.param(tmp_path, request)

    def make(fence: Fence | None = None, clock: Callable[[], float] = time.time) -> StateStore:
        store: StateStore = factory(fence, clock)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()
