"""What the client libraries say about their connections: fed to a monitor that can tell a call to give up
at once, and to the structured log at debug, deduplicated, instead of raw lines on stderr.

librdkafka reports a failed connection through its error callback and its log (both delivered only by
`poll()`, which ClientCalls runs on a thread of its own), and keeps reconnecting: a wrong password or CA
yields a FAIL line per broker every few hundred milliseconds while the admin call waits out its whole
timeout, and then the next retry does. `ConnectionMonitor` keeps the latest problem per broker and whether
every broker is down (librdkafka's `_ALL_BROKERS_DOWN`, raised each time the last one went); a call that
cannot reach any broker is failed with that problem, classified (diagnosis.py), as soon as it is clear.

kafka-python logs through the standard `logging` module (its "kafka" logger), from its IO thread; its
records go to the same deduplicating forwarder. Nothing here writes to stderr itself.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

import structlog

from reassignd.cluster.diagnosis import Cause, ConnectionProblem, classify

log = structlog.get_logger("reassignd.cluster.client")

ALL_BROKERS_DOWN: Final = "_ALL_BROKERS_DOWN"
# A problem seen before a contact check began is only blamed once the check had this long to succeed: the
# brokers may be back (a rolling restart) and librdkafka reconnecting.
SETTLE_SECONDS: Final = 1.0
# Read from a disconnect alone: the listener's protocol when these settings were never served, a broker going
# away (a restart, an outage) once they were.
AMBIGUOUS_ONCE_SERVED: Final = frozenset({Cause.NOT_SASL_TO_SASL_LISTENER, Cause.NOT_TLS_TO_TLS_LISTENER})
REPEAT_WINDOW_SECONDS: Final = 60.0


class SecretScrubber:
    """Replaces known secret values (passwords of the settings in use) in any text shown or logged: the
    libraries are not known to print them, and this makes sure. Values shorter than 4 characters are not
    scrubbed (they would mangle ordinary text; such a secret is no secret)."""

    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            self._secrets.update(v for v in values if isinstance(v, str) and len(v) >= 4)

    def __call__(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, "[redacted]")
        return text


SCRUB: Final = SecretScrubber()


class LibraryLog:
    """One client library's log lines into structlog at debug, each distinct line once per minute (with how
    many times it was repeated meanwhile). Lines differ only by timings and counters are the same line."""

    _VOLATILE = re.compile(r"\d+(?:\.\d+)?\s*(?:ms|secs?)\b|\d+ identical error\(s\) suppressed|<-\d+")

    def __init__(self, library: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.library = library
        self._clock = clock
        self._seen: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def line(self, level: str, text: str, **fields: Any) -> None:
        text = SCRUB(text)
        key = self._VOLATILE.sub("#", text)
        now = self._clock()
        with self._lock:
            shown_at, repeats = self._seen.get(key, (None, 0))
            if shown_at is not None and now - shown_at < REPEAT_WINDOW_SECONDS:
                self._seen[key] = (shown_at, repeats + 1)
                return
            if len(self._seen) > 1000:  # bounded: a flood of distinct lines forgets the oldest
                self._seen.clear()
            self._seen[key] = (now, 0)
        extra = {"repeated": repeats} if repeats else {}
        log.debug(text, library=self.library, library_level=level, **fields, **extra)


class ConnectionMonitor:
    """Thread-safe state fed by the libraries' callbacks: the latest problem per broker, whether every broker
    is down, whether a call has succeeded since. No I/O, no clock of its own (callers pass `now`)."""

    def __init__(self, bootstrap: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._bootstrap = frozenset(bootstrap)
        self._problems: dict[str, tuple[float, ConnectionProblem]] = {}
        self._all_down_at: float | None = None
        self._in_contact = False
        self._ever_in_contact = False

    @property
    def in_contact(self) -> bool:
        """A call succeeded since the brokers were last all down (or ever, for a new client)."""
        return self._in_contact

    def problem(self, problem: ConnectionProblem, now: float) -> None:
        with self._lock:
            if self._ever_in_contact and problem.cause in AMBIGUOUS_ONCE_SERVED:
                problem = ConnectionProblem(Cause.BROKER_UNREACHABLE, problem.broker, problem.detail)
            self._problems[problem.broker] = (now, problem)

    def all_down(self, now: float) -> None:
        with self._lock:
            self._all_down_at = now
            self._in_contact = False

    def contact(self) -> None:
        """A call answered: whatever failed before does not hold calls back any more."""
        with self._lock:
            self._in_contact = self._ever_in_contact = True
            self._all_down_at = None
            self._problems.clear()

    def blocking(self, started: float, now: float) -> ConnectionProblem | None:
        """The problem a contact check begun at `started` should fail with now, if any: librdkafka says every
        broker is down, and they went down during the check or the check had SETTLE_SECONDS to get through;
        or every bootstrap server failed since the check began (a listener that disconnects us without
        librdkafka calling the broker down). A problem that needs a change of settings (password, CA,
        protocol) is named before one that can pass (refused)."""
        with self._lock:
            if self._in_contact:
                return None
            down = self._all_down_at is not None and (
                self._all_down_at >= started or now - started >= SETTLE_SECONDS
            )
            every_bootstrap_failed = bool(self._bootstrap) and all(
                self._problems.get(address, (started - 1.0, None))[0] >= started
                for address in self._bootstrap
            )
            return self._worst() if down or every_bootstrap_failed else None

    def last_problem(self) -> ConnectionProblem | None:
        with self._lock:
            return self._worst()

    def _worst(self) -> ConnectionProblem | None:
        if not self._problems:
            return None
        _, problem = max(self._problems.values(), key=lambda e: (not e[1].cause.transient, e[0]))
        return problem


class LibrdkafkaEvents:
    """librdkafka's `error_cb` and `logger` (confluent-kafka calls `logger.log(level, fmt, *args)`), bound to
    one monitor and one log."""

    def __init__(self, monitor: ConnectionMonitor, clock: Callable[[], float] = time.monotonic) -> None:
        self._monitor = monitor
        self._clock = clock
        self._log = LibraryLog("librdkafka", clock)

    def error(self, error: Any) -> None:
        """error_cb: a KafkaError (librdkafka's local errors: _TRANSPORT, _SSL, _AUTHENTICATION, ...)."""
        name, text = str(error.name()), SCRUB(str(error.str()))
        now = self._clock()
        if name == ALL_BROKERS_DOWN:
            self._monitor.all_down(now)
        else:  # every other error event is about a broker connection: named, if only in librdkafka's words
            problem = classify(text, otherwise=Cause.BROKER_UNREACHABLE)
            if problem is not None:
                self._monitor.problem(problem, now)
        self._log.line("error", text, error=name)

    def log(self, level: int, fmt: str, *args: Any) -> None:
        """logger: librdkafka's log lines; a FAIL line names a connection's failure as the error does (and
        is the only word for a PLAINTEXT client at a TLS listener, which raises no error event)."""
        text = fmt % args if args else fmt
        if text.startswith("FAIL "):
            problem = classify(_librdkafka_message(text))
            if problem is not None:
                self._monitor.problem(problem, self._clock())
        self._log.line(logging.getLevelName(level).lower(), text)


def _librdkafka_message(text: str) -> str:
    """`FAIL [rdkafka#producer-1] [thrd:ssl://h:p/bootstrap]: ssl://h:p/bootstrap: ...` -> from the broker
    name on, as the error callback words it."""
    marker = "]: "
    at = text.find(marker)
    return text[at + len(marker) :] if at >= 0 else text


class KafkaPythonLogHandler(logging.Handler):
    """kafka-python's "kafka" logger into structlog (debug, deduplicated), never to stderr: its warnings
    ("Exchanging credentials in the clear") and connection errors are the libraries' business, and a failed
    call is reported once, classified. Its debug records would name every config (passwords included): the
    logger is kept at WARNING, so they are never even formatted."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._log = LibraryLog("kafka-python")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a record that cannot format is dropped, never raised into kafka-python
            return
        self._log.line(record.levelname.lower(), text, logger=record.name)


def route_kafka_python_logs() -> None:
    """Idempotent: one handler on the "kafka" logger, which no longer propagates to the root logger."""
    logger = logging.getLogger("kafka")
    if not any(isinstance(h, KafkaPythonLogHandler) for h in logger.handlers):
        logger.addHandler(KafkaPythonLogHandler())
    logger.setLevel(logging.WARNING)
    logger.propagate = False
