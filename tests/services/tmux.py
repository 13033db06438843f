"""A real terminal for tests: a detached tmux session of a given size on a private server socket, whose
screen is read with `capture-pane` (what a person would see, after the terminal's own cropping)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


def tmux_binary() -> str | None:
    return shutil.which("tmux")


@dataclass
class TmuxTerminal:
    width: int
    height: int
    socket: str = field(default_factory=lambda: f"reassignd-test-{uuid.uuid4().hex[:12]}")

    def _tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        binary = tmux_binary()
        assert binary is not None, "tmux is not installed (Debian package `tmux`; `make setup` installs it)"
        return subprocess.run(
            [binary, "-u", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def start(self, command: Sequence[str], env: Mapping[str, str]) -> None:
        """Run `command` in a new session of exactly width x height, with `env` set (and nothing of ours
        left over from the test run's own environment that would change the output)."""
        assignments = [f"{k}={v}" for k, v in env.items()]
        result = self._tmux(
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            "env",
            *assignments,
            *command,
        )
        assert result.returncode == 0, result.stderr
        self._tmux("set-option", "-t", "t", "remain-on-exit", "on")

    def screen(self) -> list[str]:
        """The visible screen, one line per row, wrapped rows joined (-J) so a line too wide shows."""
        result = self._tmux("capture-pane", "-p", "-J", "-t", "t")
        assert result.returncode == 0, result.stderr
        return result.stdout.rstrip("\n").split("\n")

    async def wait_for(self, predicate: Callable[[list[str]], bool], within: float = 20.0) -> list[str]:
        """The screen once `predicate` holds for it (the event loop keeps running meanwhile)."""
        deadline = time.monotonic() + within
        screen = self.screen()
        while not predicate(screen):
            if time.monotonic() > deadline:
                raise TimeoutError("terminal never showed what was expected:\n" + "\n".join(screen))
            await asyncio.sleep(0.2)
            screen = self.screen()
        return screen

    def close(self) -> None:
        """Ends this test's own tmux server (its private socket) and what runs in it."""
        self._tmux("kill-server")
