"""structlog set-up: JSON lines for machines, a readable console when a person is watching."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

_SECRET_KEYS = ("password", "secret", "token", "sasl.password", "ssl.key.password")


def _redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Secrets never reach logs, whatever a caller passes by mistake."""
    for key in list(event):
        if any(marker in key.lower() for marker in _SECRET_KEYS):
            event[key] = "***"
    return event


def _current_stderr(*_: Any) -> Any:
    """A logger on whatever sys.stderr is when the line is written, not when logging was configured."""
    return structlog.PrintLogger(file=sys.stderr)


def configure(level: str = "info", *, json: bool | None = None, stream: TextIO | None = None) -> None:
    use_json = not (stream or sys.stderr).isatty() if json is None else json
    renderer: Any = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=True)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _redact,
            structlog.processors.format_exc_info if use_json else structlog.processors.StackInfoRenderer(),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=stream) if stream is not None else _current_stderr,
        cache_logger_on_first_use=False,
    )


def get_logger(name: str | None = None, **bound: Any) -> Any:
    logger = structlog.get_logger(name)
    return logger.bind(**bound) if bound else logger
