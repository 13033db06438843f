"""A real Mosquitto broker from Debian's package, with our own config on a free loopback port."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.services.procs import free_port, port_open, stop_pid, wait_until


@dataclass
class MosquittoServer:
    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 15.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "mosquitto.conf"
        # Started as root it drops to the mosquitto user: log to stderr so no root-owned files appear.
        config.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n"
        )
        with (self.workdir / "mosquitto.log").open("ab") as log:
            self.proc = subprocess.Popen(
                ["/usr/sbin/mosquitto", "-c", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        wait_until(lambda: port_open(self.port), timeout, "Mosquitto", self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            stop_pid(self.proc)
            self.proc = None
