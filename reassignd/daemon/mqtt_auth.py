"""Authentication of MQTT commands: HMAC-SHA256 with a shared secret, a timestamp window and a nonce set.

Wire format of a command (the MQTT payload is UTF-8 JSON)::

    {"body": "<JSON text of the command>", "hmac": "<hex HMAC-SHA256 of the body's UTF-8 bytes>"}

and the body, once parsed::

    {"command": "pause" | "resume" | "cancel" | "set_throttles",
     "plan_id": "..." (optional; default: the active plan),
     "throttles": {"leader.reassignment.throttled.rate": 50000000, ...} (set_throttles only),
     "timestamp": <unix seconds>, "nonce": "<unique string, 8-128 chars>"}

The HMAC covers the body text exactly as sent (no re-serialisation ambiguity). A body whose timestamp is
further than the window from now is refused, and so is a nonce seen within the window: a captured command
cannot be replayed, neither later nor at once. Nonces are remembered per daemon, so after a failover the
new leader has not seen the old leader's nonces; the timestamp window bounds that exposure.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

COMMANDS: Final = frozenset({"pause", "resume", "cancel", "set_throttles"})
MAX_NONCES: Final = 100_000


class CommandRejected(Exception):
    """`reason` is a short label for metrics and the rejection event."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Command:
    name: str
    plan_id: str | None
    throttles: Mapping[str, Any]
    nonce: str
    timestamp: float


def sign(secret: bytes, body: Mapping[str, Any]) -> bytes:
    """A signed command payload (what an operator's tool publishes)."""
    text = json.dumps(dict(body), separators=(",", ":"), sort_keys=True)
    mac = hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()
    return json.dumps({"body": text, "hmac": mac}).encode()


class CommandVerifier:
    def __init__(
        self,
        secret: bytes | None,
        window_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.secret = secret
        self.window_seconds = window_seconds
        self.clock = clock
        self._nonces: dict[str, float] = {}

    def verify(self, payload: bytes) -> Command:
        if not self.secret:
            raise CommandRejected("no_secret", "no command secret is configured")
        try:
            envelope = json.loads(payload)
        except (UnicodeDecodeError, ValueError):
            raise CommandRejected("malformed", "payload is not JSON") from None
        if not isinstance(envelope, dict):
            raise CommandRejected("malformed", "payload is not a JSON object")
        body_text, mac = envelope.get("body"), envelope.get("hmac")
        if not isinstance(body_text, str) or not isinstance(mac, str):
            raise CommandRejected("unsigned", "payload needs string fields 'body' and 'hmac'")
        expected = hmac.new(self.secret, body_text.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, mac.lower()):
            raise CommandRejected("bad_signature", "HMAC does not match")
        try:
            body = json.loads(body_text)
        except ValueError:
            raise CommandRejected("malformed", "body is not JSON") from None
        if not isinstance(body, dict):
            raise CommandRejected("malformed", "body is not a JSON object")
        return self._check(body)

    def _check(self, body: Mapping[str, Any]) -> Command:
        name = body.get("command")
        if name not in COMMANDS:
            raise CommandRejected(
                "unknown_command", f"command must be one of {sorted(COMMANDS)}, got {name!r}"
            )
        timestamp = body.get("timestamp")
        if not isinstance(timestamp, int | float) or isinstance(timestamp, bool):
            raise CommandRejected("malformed", f"timestamp must be a number, got {timestamp!r}")
        now = self.clock()
        if abs(now - float(timestamp)) > self.window_seconds:
            raise CommandRejected(
                "stale", f"timestamp {timestamp} is more than {self.window_seconds}s from now ({now:.0f})"
            )
        nonce = body.get("nonce")
        if not isinstance(nonce, str) or not 8 <= len(nonce) <= 128:
            raise CommandRejected("malformed", "nonce must be a string of 8 to 128 characters")
        self._forget_expired(now)
        if nonce in self._nonces:
            raise CommandRejected("replayed", f"nonce {nonce!r} was already used")
        plan_id = body.get("plan_id")
        if plan_id is not None and not isinstance(plan_id, str):
            raise CommandRejected("malformed", f"plan_id must be a string, got {plan_id!r}")
        throttles = body.get("throttles", {})
        if name == "set_throttles" and (not isinstance(throttles, dict) or not throttles):
            raise CommandRejected("malformed", "set_throttles needs a non-empty 'throttles' object")
        self._nonces[nonce] = float(timestamp)
        return Command(str(name), plan_id, dict(throttles or {}), nonce, float(timestamp))

    def _forget_expired(self, now: float) -> None:
        """Nonces whose timestamp left the window can go: such a command is refused as stale anyway."""
        if len(self._nonces) < 1024:
            return
        horizon = now - self.window_seconds
        self._nonces = {n: t for n, t in self._nonces.items() if t >= horizon}
        if len(self._nonces) >= MAX_NONCES:
            raise CommandRejected("overloaded", f"more than {MAX_NONCES} commands within the window")
