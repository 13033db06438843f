"""Whether this daemon may write to the cluster: the HA election's verdict (daemon/ha.py) and the cluster's
writer group (daemon/writer.py), combined; and what a request that would write is told when it may not."""

from __future__ import annotations

import asyncio
import contextlib

from reassignd.daemon.service import JSON, ServiceError

WRITER_WAIT_SECONDS = 15.0
"""How long a write request waits, just after start, for the writer group to say who writes."""


class WriteAuthority:
    """`is_leader`/`leader_address` are the role in force; `verdict()` what the two sources say now (the
    controller moves the role there, rebuilding its run)."""

    def __init__(self) -> None:
        self.is_leader = True
        """May write: the HA leader (or no HA) and the cluster's writer."""
        self.leader_address: str | None = None
        self.ha: tuple[bool, str | None] = (True, None)
        self.writer: JSON | None = None
        """Who holds the cluster's writer right ({"self", "node", "url"}); None: not taken part (tests)."""
        self._writer_seen = asyncio.Event()

    def writer_changed(self, holding: bool, writer: JSON | None) -> None:
        self.writer = {"self": holding, **(writer or {"node": None, "url": None})}
        self._writer_seen.set()

    def verdict(self) -> tuple[bool, str | None]:
        """(may write, the address of the daemon that does, when another one does)."""
        ha_leading, ha_address = self.ha
        holding = self.writer is None or bool(self.writer["self"])
        if not ha_leading:
            return False, ha_address
        return holding, None if holding else (self.writer or {}).get("url")

    def _nobody_named(self) -> bool:
        return bool(
            self.ha[0] and self.writer is not None and not self.writer["self"] and not self.writer["url"]
        )

    async def settled(self) -> None:
        """Returns once the writer group names a writer, or after `WRITER_WAIT_SECONDS`: a request made just
        after start would otherwise be refused only because the group is still forming."""
        if not self._nobody_named():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(WRITER_WAIT_SECONDS):
                while self._nobody_named():
                    self._writer_seen.clear()
                    await self._writer_seen.wait()

    def refusal(self, unreachable: str | None, waiting_for_the_right: bool) -> ServiceError:
        """Why a write request is refused: the cluster cannot be read while nobody holds the right, another
        daemon holds it, or this one is an HA standby."""
        if waiting_for_the_right and unreachable:  # nobody can write: say why
            return ServiceError("unavailable", f"cannot read the cluster: {unreachable}")
        if self.ha[0] and self.writer is not None and not self.writer["self"]:
            node, url = self.writer.get("node"), self.writer.get("url")
            who = f"{node} at {url}" if url else "another daemon, or none yet"
            return ServiceError(
                "not_leader",
                f"another reassignd holds this cluster's writer right ({who}); this daemon does not write",
                details={"leader": url},
            )
        return ServiceError("not_leader", "this daemon is a standby", details={"leader": self.leader_address})
