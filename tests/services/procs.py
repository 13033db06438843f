"""Process helpers shared by the service fixtures."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable

from reassignd.children import free_port

__all__ = ["free_port", "wait_until"]


def wait_until(
    predicate: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} before it was ready")
        if predicate():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what} not ready after {timeout}s")


def stop_pid(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Stop exactly the process we started (never by name): TERM, then KILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0
