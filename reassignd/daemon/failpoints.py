"""Crash points for recovery tests (the gofail / FoundationDB approach), off unless configured.

`REASSIGND_FAILPOINTS="after_alter_reassignments=2,after_throttle_write=1"` makes the daemon kill itself
with SIGKILL the Nth time it passes that point, so tests can cut it at exact places — between recording
a step and sending it, between a throttle write and the next — and prove nothing is lost or repeated.
The variable is read once at import; production never sets it.
"""

from __future__ import annotations

import os
import signal

ENV = "REASSIGND_FAILPOINTS"


def _parse(text: str) -> dict[str, int]:
    points: dict[str, int] = {}
    for item in text.split(","):
        name, _, count = item.strip().partition("=")
        if name:
            points[name] = int(count or 1)
    return points


_remaining = _parse(os.environ.get(ENV, ""))


def hit(name: str) -> None:
    """Pass the point `name`; dies here with SIGKILL when it is armed and its count runs out."""
    if name not in _remaining:
        return
    _remaining[name] -= 1
    if _remaining[name] <= 0:
        os.kill(os.getpid(), signal.SIGKILL)
