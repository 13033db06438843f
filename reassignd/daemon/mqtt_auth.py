"""Authentication of MQTT commands: HMAC-SHA256 with a shared secret, a timestamp window and a nonce set.

Wire format of a command (the MQTT payload is UTF-8 JSON)::

    {"body": "<JSON text of the command>", "hmac": "<hex HMAC-SHA256 of the body's UTF-8 bytes>"}

and the body, once parsed::

    {"command": "pause" | "resume" | "cancel" | "set_throttles" | "retarget" | "decommission"
                | "recommission" | "approve_anomaly",
     "plan_id": "..." (optional; default: the active plan),
     "throttles": {"leader.reassignment.throttled.rate": 50000000, ...} (set_throttles only),
     "broker": 12 (decommission and recommission only, required),
     "drain": true, "reason": "..." (decommission only, optional),
     "anomaly": "<id>" (approve_anomaly only, required: self-healing's proposed fix),
     "timestamp": <unix seconds>, "nonce": "<unique string, 8-128 chars>"}

The HMAC covers the body text exactly as sent (no re-serialisation ambiguity). A body whose timestamp is
further than the window from now is refused, and so is a nonce seen within the window: a captured command
cannot be replayed, neither later nor at once. Payload and body are read by strictjson (at most
MAX_PAYLOAD_BYTES, nesting, duplicate keys, only finite numbers: a `NaN` timestamp is never "within the
window"), and a body with a field not listed above is refused.

The nonces seen within the window are kept in a small file in the daemon's state directory (`NonceLedger`,
written atomically on every accepted command), so a restart does not open a replay window. Nonces are
remembered per daemon: after a failover the new leader has not seen the old leader's; the timestamp window
bounds that exposure.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from reassignd import strictjson
from reassignd.logs import get_logger
from reassignd.model import InvalidInputError

COMMANDS: Final = frozenset(
    {
        "pause",
        "resume",
        "cancel",
        "set_throttles",
        "retarget",
        "decommission",
        "recommission",
        "approve_anomaly",
    }
)
BROKER_COMMANDS: Final = frozenset({"decommission", "recommission"})
BODY_FIELDS: Final = frozenset(
    {"command", "plan_id", "throttles", "timestamp", "nonce", "broker", "drain", "reason", "anomaly"}
)
MAX_NONCES: Final = 100_000
MAX_PAYLOAD_BYTES: Final = 64 * 1024
NONCE_FILE: Final = "mqtt-nonces.json"
_log = get_logger("reassignd.mqtt")


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
    broker: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    """decommission: `drain` and `reason` as sent (the controller checks them, naming what is wrong)."""
    anomaly: str | None = None
    """approve_anomaly: the anomaly's id."""


def sign(secret: bytes, body: Mapping[str, Any]) -> bytes:
    """A signed command payload (what an operator's tool publishes)."""
    text = json.dumps(dict(body), separators=(",", ":"), sort_keys=True)
    mac = hmac.new(secret, text.encode(), hashlib.sha256).hexdigest()
    return json.dumps({"body": text, "hmac": mac}).encode()


class NonceLedger:
    """The nonces accepted within the window, kept in a JSON file so they outlive a restart.

    `horizon` is the oldest timestamp still remembered: commands older than it are refused as stale even
    if the window is widened later, so forgetting a nonce never makes its command acceptable again.
    Written to a temporary file, flushed and renamed over the old one: a crash leaves one or the other.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path is not None else None
        self.nonces: dict[str, float] = {}
        self.horizon = -math.inf
        if self.path is not None:
            self._load(self.path)

    def _load(self, path: Path) -> None:
        try:
            data = strictjson.loads(path.read_bytes(), "nonce file", max_bytes=64 * 1024 * 1024)
            nonces = data["nonces"]
            horizon = data["horizon"]
            if not isinstance(nonces, dict) or not all(
                isinstance(t, int | float) and not isinstance(t, bool) for t in nonces.values()
            ):
                raise TypeError("nonces")
            self.nonces = {str(n): float(t) for n, t in nonces.items()}
            self.horizon = float(horizon) if isinstance(horizon, int | float) else -math.inf
        except FileNotFoundError:
            return
        except (OSError, InvalidInputError, KeyError, TypeError) as exc:
            # Unreadable: refuse everything up to now rather than forget which commands were seen.
            self.nonces, self.horizon = {}, time.time()
            _log.warning(
                "mqtt nonce file unreadable; commands before now are refused", path=str(path), error=str(exc)
            )

    def seen(self, nonce: str) -> bool:
        return nonce in self.nonces

    def add(self, nonce: str, timestamp: float) -> None:
        self.nonces[nonce] = timestamp
        self.save()

    def forget_before(self, horizon: float) -> None:
        self.horizon = max(self.horizon, horizon)
        self.nonces = {n: t for n, t in self.nonces.items() if t >= horizon}

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document = {"horizon": self.horizon if math.isfinite(self.horizon) else None, "nonces": self.nonces}
        fd, tmp = tempfile.mkstemp(prefix=".mqtt-nonces.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(document, handle, separators=(",", ":"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


class CommandVerifier:
    def __init__(
        self,
        secret: bytes | None,
        window_seconds: float,
        clock: Callable[[], float] = time.time,
        nonce_file: str | os.PathLike[str] | None = None,
    ) -> None:
        self.secret = secret
        self.window_seconds = window_seconds
        self.clock = clock
        self.ledger = NonceLedger(nonce_file)

    @property
    def _nonces(self) -> dict[str, float]:
        return self.ledger.nonces

    def verify(self, payload: bytes) -> Command:
        if not self.secret:
            raise CommandRejected("no_secret", "no command secret is configured")
        envelope = _parse(payload, "payload")
        if not isinstance(envelope, dict):
            raise CommandRejected("malformed", "payload is not a JSON object")
        body_text, mac = envelope.get("body"), envelope.get("hmac")
        if not isinstance(body_text, str) or not isinstance(mac, str):
            raise CommandRejected("unsigned", "payload needs string fields 'body' and 'hmac'")
        expected = hmac.new(
            self.secret, body_text.encode("utf-8", "surrogatepass"), hashlib.sha256
        ).hexdigest()
        if not hmac.compare_digest(expected, mac.lower()):
            raise CommandRejected("bad_signature", "HMAC does not match")
        body = _parse(body_text, "body")
        if not isinstance(body, dict):
            raise CommandRejected("malformed", "body is not a JSON object")
        return self._check(body)

    def _check(self, body: Mapping[str, Any]) -> Command:
        unknown = sorted(set(body) - BODY_FIELDS)
        if unknown:
            raise CommandRejected(
                "malformed", f"unknown field(s) {unknown[:5]}; known: {sorted(BODY_FIELDS)}"
            )
        name = body.get("command")
        if name not in COMMANDS:
            raise CommandRejected(
                "unknown_command", f"command must be one of {sorted(COMMANDS)}, got {name!r}"
            )
        timestamp = body.get("timestamp")
        if (
            not isinstance(timestamp, int | float)
            or isinstance(timestamp, bool)
            or not math.isfinite(timestamp)
        ):
            raise CommandRejected(
                "malformed", f"timestamp must be a finite number, got {str(timestamp)[:40]}"
            )
        now = self.clock()
        if abs(now - float(timestamp)) > self.window_seconds or float(timestamp) < self.ledger.horizon:
            raise CommandRejected(
                "stale", f"timestamp {timestamp} is more than {self.window_seconds}s from now ({now:.0f})"
            )
        nonce = body.get("nonce")
        if not isinstance(nonce, str) or not 8 <= len(nonce) <= 128:
            raise CommandRejected("malformed", "nonce must be a string of 8 to 128 characters")
        self._forget_expired(now)
        if self.ledger.seen(nonce):
            raise CommandRejected("replayed", f"nonce {nonce!r} was already used")
        plan_id = body.get("plan_id")
        if plan_id is not None and not isinstance(plan_id, str):
            raise CommandRejected("malformed", f"plan_id must be a string, got {plan_id!r}")
        throttles = body.get("throttles", {})
        if name == "set_throttles" and (not isinstance(throttles, dict) or not throttles):
            raise CommandRejected("malformed", "set_throttles needs a non-empty 'throttles' object")
        broker = body.get("broker")
        if name in BROKER_COMMANDS and (isinstance(broker, bool) or not isinstance(broker, int)):
            raise CommandRejected("malformed", f"{name} needs 'broker', a broker id, got {str(broker)[:40]}")
        options = {k: body[k] for k in ("drain", "reason") if k in body}
        if (broker is not None and name not in BROKER_COMMANDS) or (options and name != "decommission"):
            raise CommandRejected("malformed", f"{name} takes no broker, drain or reason")
        anomaly = body.get("anomaly")
        if name == "approve_anomaly" and (not isinstance(anomaly, str) or not 1 <= len(anomaly) <= 200):
            raise CommandRejected("malformed", f"{name} needs 'anomaly', its id, got {str(anomaly)[:40]}")
        if anomaly is not None and name != "approve_anomaly":
            raise CommandRejected("malformed", f"{name} takes no anomaly")
        try:
            self.ledger.add(nonce, float(timestamp))
        except OSError as exc:  # not remembered, not executed: a restart could not tell it was used
            self.ledger.nonces.pop(nonce, None)
            raise CommandRejected("unavailable", f"cannot record the nonce: {exc.strerror or exc}") from None
        return Command(
            str(name), plan_id, dict(throttles or {}), nonce, float(timestamp), broker, options, anomaly
        )

    def _forget_expired(self, now: float) -> None:
        """Nonces whose timestamp left the window can go: such a command is refused as stale anyway."""
        if len(self._nonces) < 1024:
            return
        self.ledger.forget_before(now - self.window_seconds)
        if len(self._nonces) >= MAX_NONCES:
            raise CommandRejected("overloaded", f"more than {MAX_NONCES} commands within the window")


def _parse(raw: bytes | str, what: str) -> Any:
    try:
        return strictjson.loads(raw, f"MQTT command {what}", max_bytes=MAX_PAYLOAD_BYTES, where=what)
    except InvalidInputError as exc:
        problem = exc.problems[0]
        raise CommandRejected(
            "malformed", f"{what} is not acceptable JSON: {problem.field}: {problem.message}"
        ) from None
