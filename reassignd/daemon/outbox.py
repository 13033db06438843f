"""The controller's events on their way out (the MQTT publisher, the journal's subscribers).

While a command or a cycle runs, its events are held and sent once it published the view they describe: a
subscriber that reads the plan's status on `plan.paused` must find the plan paused, not still running.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

Event = dict[str, Any]


class Outbox:
    def __init__(self, send: Callable[[Event], None] | None) -> None:
        self.send = send
        self._held: list[Event] | None = None

    def put(self, event: Event) -> None:
        if self._held is not None:
            self._held.append(event)
        elif self.send is not None:
            self.send(event)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Events put inside go out at its end, in order (nested: the outermost one sends them)."""
        if self._held is not None:
            yield
            return
        held: list[Event] = []
        self._held = held
        try:
            yield
        finally:
            self._held = None
            for event in held:
                self.put(event)
