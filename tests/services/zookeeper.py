"""A real ZooKeeper server from Debian's `zookeeper` package, run from its jar with our own config."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.services.procs import free_port, stop_pid, wait_until

CLASSPATH = ":".join(
    ["/etc/zookeeper/conf", "/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"]
)


def four_letter(port: int, word: bytes, timeout: float = 1.0) -> bytes:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(word)
            chunks = []
            while chunk := sock.recv(1024):
                chunks.append(chunk)
            return b"".join(chunks)
    except OSError:
        return b""


@dataclass
class ZooKeeperServer:
    """One standalone server; `stop()`/`start()` keep the data dir, so sessions can expire across a stop."""

    workdir: Path
    port: int = field(default_factory=free_port)
    tick_ms: int = 500
    proc: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "zoo.cfg"
        config.write_text(
            "\n".join(
                [
                    f"tickTime={self.tick_ms}",
                    f"dataDir={data}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=ruok,stat",
                    "maxSessionTimeout=60000",
                    "minSessionTimeout=1000",
                    "",
                ]
            )
        )
        with (self.workdir / "zookeeper.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    "java",
                    "-Xmx256m",
                    "-cp",
                    CLASSPATH,
                    "org.apache.zookeeper.server.ZooKeeperServerMain",
                    str(config),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        wait_until(lambda: four_letter(self.port, b"ruok") == b"imok", timeout, "ZooKeeper", self.proc)

    def stop(self) -> None:
        if self.proc is not None:
            stop_pid(self.proc)
            self.proc = None
