"""Small helpers shared by the subcommand modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from reassignd.model import (
    ClusterSnapshot,
    InvalidInputError,
    Problem,
    ReassignmentPlan,
    snapshot_from_json,
)


def read_text(path: str, what: str) -> str:
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(what, [Problem(path, "(file)", exc.strerror or str(exc))]) from None


def load_plan(path: str) -> ReassignmentPlan:
    return ReassignmentPlan.from_json(read_text(path, "reassignment plan"))


def load_snapshot(path: str) -> ClusterSnapshot:
    return snapshot_from_json(read_text(path, "cluster snapshot"))


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
