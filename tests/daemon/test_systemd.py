"""sd_notify over a fake NOTIFY_SOCKET: READY, WATCHDOG, STOPPING as systemd would receive them."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from reassignd.daemon.systemd import SystemdNotifier


def _listen(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2)
    return sock


def test_notifications_reach_the_socket(tmp_path: Path) -> None:
    path = tmp_path / "notify.sock"
    with _listen(path) as sock:
        notifier = SystemdNotifier({"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "4000000"})
        assert notifier.enabled and notifier.watchdog_seconds == 4.0
        assert notifier.ready("serving")
        fields = sock.recv(1024).decode().split("\n")
        assert "READY=1" in fields and "STATUS=serving" in fields and f"MAINPID={os.getpid()}" in fields
        assert notifier.watchdog()
        assert sock.recv(1024) == b"WATCHDOG=1"
        assert notifier.stopping()
        assert sock.recv(1024) == b"STOPPING=1"


def test_without_systemd_nothing_is_sent() -> None:
    notifier = SystemdNotifier({})
    assert not notifier.enabled and notifier.watchdog_seconds is None
    assert not notifier.ready()


def test_watchdog_for_another_pid_is_ignored(tmp_path: Path) -> None:
    notifier = SystemdNotifier(
        {"NOTIFY_SOCKET": str(tmp_path / "x"), "WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"}
    )
    assert notifier.watchdog_seconds is None


def test_a_missing_socket_is_not_fatal(tmp_path: Path) -> None:
    assert not SystemdNotifier({"NOTIFY_SOCKET": str(tmp_path / "absent.sock")}).ready()
