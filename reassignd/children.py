"""Child processes the demo and the local Kafka cluster start: free loopback ports, and stopping exactly
the process we started, by its PID (never by name)."""

from __future__ import annotations

import random
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any, Final

LOWEST_PORT: Final = 10000
_given: set[int] = set()


def free_port() -> int:
    """A loopback port free now, below the kernel's ephemeral range and not given before by this process.

    A port the kernel hands out for bind(0) is an ephemeral one: between our check and the child's own
    bind, any outgoing connection on the machine (a broker's to another, a client's) may take it, and the
    child dies with `Address already in use`. Below the range only another caller of this function can
    collide, and random choice over some 20,000 ports makes that rare.
    """
    low, _ = _ephemeral_range()
    for _ in range(1000):
        port = random.randrange(LOWEST_PORT, max(low, LOWEST_PORT + 1000))
        if port not in _given and _bindable(port):
            _given.add(port)
            return port
    raise RuntimeError(f"no free loopback port found in {LOWEST_PORT}..{low}")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _ephemeral_range() -> tuple[int, int]:
    """/proc/sys/net/ipv4/ip_local_port_range, or Linux's default where there is no such file."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def stop_process(proc: subprocess.Popen[Any], timeout: float = 10.0) -> int | None:
    """SIGTERM exactly this process, SIGKILL if it has not gone after `timeout`."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)
        except ProcessLookupError:
            pass
    return proc.returncode
