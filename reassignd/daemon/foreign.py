"""Cancelling reassignments another tool started (KIP-455 cancel; Kafka's `--cancel`), only when asked.

reassignd refuses to overlap a reassignment it does not own (docs/api.md, 409 conflict); an operator who
wants it gone says so here. The selection is pure: the request names topics by regex (whole name, as
Kafka's tools and the planner match) and/or partitions; every reassignment the cluster lists that matches
and is not on a partition of the running plan is cancelled. A partition of the running plan is never
touched: named explicitly it is refused (409, nothing cancelled), matched by the regex it is skipped and
listed, since a step of ours may be in flight there and the plan's own cancel restores it properly.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from reassignd.daemon.service import ServiceError
from reassignd.model import INT32_MAX, Problem, TopicPartition, shown

REQUEST_FIELDS = frozenset({"topics", "partitions"})


@dataclass(frozen=True, slots=True)
class ForeignSelection:
    topics: re.Pattern[str] | None
    partitions: frozenset[TopicPartition] | None

    def matches(self, tp: TopicPartition) -> bool:
        if self.topics is not None and self.topics.fullmatch(tp.topic) is None:
            return False
        return self.partitions is None or tp in self.partitions


def parse_request(body: Any) -> ForeignSelection:
    """`{"topics"?: REGEX, "partitions"?: [{"topic", "partition"}]}`; every problem named (400)."""
    problems: list[Problem] = []
    if not isinstance(body, Mapping):
        raise ServiceError("invalid_request", "the body must be a JSON object")
    for key in sorted(set(body) - REQUEST_FIELDS):
        problems.append(Problem("request", key, "unknown field (known: partitions, topics)"))
    topics = None
    raw = body.get("topics")
    if "topics" in body:  # null is not absent: refused like any other non-string
        if not isinstance(raw, str) or not raw:
            problems.append(Problem("request", "topics", f"must be a regular expression, got {shown(raw)}"))
        else:
            try:
                topics = re.compile(raw)
            except re.error as exc:
                problems.append(Problem("request", "topics", f"not a regular expression: {exc}"))
    partitions = None
    raw = body.get("partitions")
    if "partitions" in body:
        partitions = frozenset(_partitions(raw, problems))
    if problems:
        raise ServiceError("invalid_request", f"{len(problems)} problem(s) in the request", tuple(problems))
    return ForeignSelection(topics, partitions)


def _partitions(raw: Any, problems: list[Problem]) -> list[TopicPartition]:
    if not isinstance(raw, list) or not raw:
        problems.append(Problem("request", "partitions", f"must be a non-empty list, got {shown(raw)}"))
        return []
    out = []
    for i, entry in enumerate(raw):
        where = f"partitions[{i}]"
        ok = (
            isinstance(entry, Mapping)
            and set(entry) == {"topic", "partition"}
            and isinstance(entry["topic"], str)
            and bool(entry["topic"])
            and type(entry["partition"]) is int
            and 0 <= entry["partition"] <= INT32_MAX
        )
        if not ok:
            problems.append(
                Problem("request", where, f'must be {{"topic", "partition"}}, got {shown(entry)}')
            )
            continue
        out.append(TopicPartition(entry["topic"], entry["partition"]))
    return out


def select(
    selection: ForeignSelection, ongoing: Collection[TopicPartition], ours: Mapping[TopicPartition, str]
) -> tuple[list[TopicPartition], list[TopicPartition]]:
    """(to cancel, skipped as ours), sorted. Raises 409 when a partition named explicitly is ours."""
    if selection.partitions is not None:
        taken = sorted(tp for tp in selection.partitions if tp in ours)
        if taken:
            plan_id = ours[taken[0]]
            raise ServiceError(
                "conflict",
                f"{len(taken)} partition(s) belong to plan {plan_id}: cancel the plan instead",
                details={"plan_id": plan_id, "partitions": [str(tp) for tp in taken[:20]]},
            )
    chosen = sorted(tp for tp in ongoing if selection.matches(tp))
    return [tp for tp in chosen if tp not in ours], [tp for tp in chosen if tp in ours]
