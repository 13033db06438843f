"""Child processes the demo and the local Kafka cluster start: free loopback ports, and stopping exactly
the process we started, by its PID (never by name)."""

from __future__ import annotations

import signal
import socket
import subprocess
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
