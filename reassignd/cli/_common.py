"""Small helpers shared by the subcommand modules: bounded file reading, JSON output, the one error shape."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from reassignd.model import (
    MAX_DOCUMENT_BYTES,
    ClusterSnapshot,
    InvalidInputError,
    Problem,
    ReassignmentPlan,
    snapshot_from_json,
)


def read_bytes(path: str, what: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> bytes:
    """A file's (or stdin's, for `-`) bytes, at most `max_bytes`; InvalidInputError names the file."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with open(path, "rb") as handle:
                raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InvalidInputError(what, [Problem(path, "(file)", exc.strerror or str(exc))]) from None
    if len(raw) > max_bytes:
        raise InvalidInputError(what, [Problem(path, "(file)", f"is larger than {max_bytes} bytes")])
    return raw


def read_text(path: str, what: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    raw = read_bytes(path, what, max_bytes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            what, [Problem(path, "(encoding)", f"is not UTF-8: {exc.reason} at byte {exc.start}")]
        ) from None


def _located(exc: InvalidInputError, path: str) -> InvalidInputError:
    """Problems about the whole document name the file instead of `(document)`."""
    problems = [Problem(path, p.field, p.message) if p.where == "(document)" else p for p in exc.problems]
    return InvalidInputError(exc.what, problems)


def load_plan(path: str) -> ReassignmentPlan:
    try:
        return ReassignmentPlan.from_json(read_bytes(path, "reassignment plan"))
    except InvalidInputError as exc:
        raise _located(exc, path) from None


def load_snapshot(path: str) -> ClusterSnapshot:
    try:
        return snapshot_from_json(read_bytes(path, "cluster snapshot"))
    except InvalidInputError as exc:
        raise _located(exc, path) from None


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def error_document(
    code: str,
    message: str,
    problems: Iterable[Problem | Mapping[str, Any]] = (),
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The API's error shape, `{"error": {"code", "message", "problems"?, "details"?}}`, for `--json`."""
    body: dict[str, Any] = {"code": code, "message": message}
    listed = [
        {"where": p.where, "field": p.field, "message": p.message} if isinstance(p, Problem) else dict(p)
        for p in problems
    ]
    if listed:
        body["problems"] = listed
    if details:
        body["details"] = dict(details)
    return {"error": body}


def read_at_line(read_at: float) -> str:
    """How old a snapshot's sizes and rates are (producers kept writing since)."""
    from reassignd.cli.watch import format_duration

    age = format_duration(max(0.0, time.time() - read_at))
    return f"sizes and rates as read at {utc_seconds(read_at)} ({age} ago)"


def utc_seconds(ts: float) -> str:
    """`2026-11-27T14:03:00Z`: an instant as the one-shot commands print it."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def poll_interval(text: str) -> float:
    """`--interval` of the watching commands: seconds between polls."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"interval must be between 0.05 and 3600 seconds, got {text}")
    return value
