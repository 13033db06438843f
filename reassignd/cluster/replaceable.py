"""One kafka-python admin client, made on first use and replaced after a failure that shows its view of the
cluster is stale: kafka-python's metadata forgets a broker that stopped and, asked for it once it is back,
answers UnknownBrokerIdError until a refresh that may not come for minutes, and it refreshes its cached
controller only on NOT_CONTROLLER. Used by the admin calls (clients.py) and the writer group (group.py).

The constructor connects and blocks for up to the bootstrap timeout when no broker answers. It runs outside
the lock `close()` takes, one at a time, so closing never waits out a bootstrap."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import structlog

log = structlog.get_logger("reassignd.cluster")

Factory = Callable[..., Any]


class ReplaceableClient:
    def __init__(
        self,
        config: Mapping[str, Any],
        factory: Factory,
        closed_error: Callable[[], Exception],
        on_new: Callable[[Any], None] = lambda client: None,
    ) -> None:
        """`factory(**config)` makes a client; `on_new` sees each new one before any call does;
        `closed_error()` is raised once `close()` was called."""
        self._config = dict(config)
        self._factory = factory
        self._closed_error = closed_error
        self._on_new = on_new
        self._client: Any = None
        self._closed = False
        self._lock = threading.Lock()  # held for moments only
        self._building = threading.Lock()  # held for a whole bootstrap

    def get(self) -> Any:
        """The current client, or a new one."""
        current = self._current()
        if current is not None:
            return current
        with self._building:
            current = self._current()
            if current is not None:
                return current
            client = self._factory(**self._config)
            self._on_new(client)
            with self._lock:
                kept = not self._closed
                if kept:
                    self._client = client
        if not kept:  # closed during the bootstrap: nobody else would close it
            _close_quietly(client)
            raise self._closed_error()
        return client

    def _current(self) -> Any:
        with self._lock:
            if self._closed:
                raise self._closed_error()
            return self._client

    @property
    def held(self) -> Any:
        """The current client, None when there is none (closed, discarded, or not made yet)."""
        with self._lock:
            return self._client

    def discard(self, client: Any) -> bool:
        """Closes `client` unless another call replaced it already; whether it did."""
        with self._lock:
            if self._client is not client:
                return False
            self._client = None
        _close_quietly(client)
        return True

    def close(self) -> Any:
        """No client is made from now on; the current one, if any, for the caller to close (or leave)."""
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
        return client


def _close_quietly(client: Any) -> None:
    try:
        client.close()
    except Exception as exc:  # closing a client whose broker vanished must not mask the real error
        log.debug("closing the old kafka-python client failed", error=str(exc))
