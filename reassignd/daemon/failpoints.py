"""Crash points for recovery tests (the gofail / FoundationDB approach), off unless configured.

`REASSIGND_FAILPOINTS="after_alter_reassignments=2,after_throttle_write=1"` makes the daemon kill itself
with SIGKILL the Nth time it passes that point, so tests can cut it at exact places — between recording
a step and sending it, between a throttle write and the next — and prove nothing is lost or repeated.
`name=N:stop` stops the process with SIGSTOP instead (it resumes on SIGCONT), for pauses at exact places:
a leader frozen between its leadership check and its write. The variable is read once at import;
production never sets it.
"""

from __future__ import annotations

import os
import signal

ENV = "REASSIGND_FAILPOINTS"


_SIGNALS = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}


def _parse(text: str) -> dict[str, list[int]]:
    """name -> [count, signal]."""
    points: dict[str, list[int]] = {}
    for item in text.split(","):
        name, _, spec = item.strip().partition("=")
        if not name:
            continue
        count, _, action = spec.partition(":")
        if (action or "kill") not in _SIGNALS:
            raise ValueError(f"{ENV}: unknown action {action!r} for {name!r} (kill or stop)")
        points[name] = [int(count or 1), int(_SIGNALS[action or "kill"])]
    return points


_armed = _parse(os.environ.get(ENV, ""))


def hit(name: str) -> None:
    """Pass the point `name`; the process is signalled here (once) when it is armed and its count runs out."""
    point = _armed.get(name)
    if point is None:
        return
    point[0] -= 1
    if point[0] == 0:
        os.kill(os.getpid(), point[1])
