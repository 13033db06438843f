"""Who a journaled change is by: the API caller (token role, the name its client gives, its address), an
MQTT command, a SIGHUP reload, or the daemon itself (no actor set: its own decisions).

A context variable, so the request or command that made a change marks every event it journals without
each call site passing it on: asyncio tasks and `asyncio.to_thread` (the store's commits) copy the context.
Events carry it in their data as `by`, added as the store writes them (`stamped`); the daemon's own
events carry none.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Final

SELF: Final[Mapping[str, str]] = {"via": "self"}
_ACTOR: ContextVar[Mapping[str, str] | None] = ContextVar("reassignd_actor", default=None)


def current() -> Mapping[str, str] | None:
    return _ACTOR.get()


@contextlib.contextmanager
def acting_as(actor: Mapping[str, str]) -> Iterator[None]:
    token = _ACTOR.set(dict(actor))
    try:
        yield
    finally:
        _ACTOR.reset(token)


def stamped(data: Mapping[str, object]) -> dict[str, object]:
    """An event's data as the journal keeps it: with who made the change, when someone did."""
    by = current()
    return {**data, "by": dict(by)} if by is not None and "by" not in data else dict(data)
