"""systemd's notify protocol (sd_notify), spoken directly: a datagram to $NOTIFY_SOCKET.

A few lines instead of a dependency. Type=notify units learn READY=1 once the API serves and the store is
open, WATCHDOG=1 at half the WatchdogSec interval while cycles keep completing, and STOPPING=1 on the way
out. Without NOTIFY_SOCKET (not under systemd) every call is a no-op.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping


class SystemdNotifier:
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        address = env.get("NOTIFY_SOCKET", "")
        # An abstract socket is written with a leading '@' and means a leading NUL byte.
        self.address = "\0" + address[1:] if address.startswith("@") else address
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        mine = not pid or pid == str(os.getpid())
        self.watchdog_seconds = int(usec) / 1_000_000 if usec.isdigit() and mine else None

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def notify(self, *fields: str) -> bool:
        if not self.address:
            return False
        message = "\n".join(fields).encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            try:
                sock.connect(self.address)
                sock.sendall(message)
            except OSError:
                return False
        return True

    def ready(self, status: str = "running") -> bool:
        return self.notify("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={text[:200]}")

    def reloading(self) -> bool:
        return self.notify("RELOADING=1")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1")
