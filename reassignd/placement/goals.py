"""What a plan is asked to do: the goal, the threshold band, exclusions and capacities, checked as a whole.

Goals (KIP-166's, in Cruise Control's spirit): the *hard* goals are rack spread (KIP-879: no move may worsen
a partition's spread) and, with a capacity file, disk and network in/out under capacity x threshold; no
move ever breaks one. The *soft* goals are balance: replicas (`replica-balance`, and `drain` / `fill`),
preferred leaders, and bytes (`--size-aware`); they are met as far as the hard goals and the exclusions
allow, and the report says which held.

Exclusions: `topics` / `exclude_topics` are regular expressions matched against the whole topic name (as
Cruise Control and Kafka's tools match them); partitions of other topics never move, but their replicas
still count in every broker's load. `exclude_brokers` never receive a replica or a preferred leadership
from any goal, are left out of the balance band (their load is not averaged in), and keep what they hold
unless they are drained.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from reassignd.model import InvalidInputError, Problem
from reassignd.placement.capacity import Capacities

GOALS: Final = ("leader-balance", "replica-balance", "cluster-balance", "drain", "fill")
REPLICA_GOALS: Final = ("replica-balance", "cluster-balance", "drain", "fill")
LEADER_GOALS: Final = ("leader-balance", "cluster-balance", "fill")
"""Goals that balance preferred leaders unless asked not to (`leaders=False`). A drain and a replica
balance change only the partitions they move, and a preferred leader only where it moved, unless asked to
balance leaders too (`leaders=True`, the CLI's --leaders): a drain moves only what it must."""


def parse_threshold(text: str) -> float:
    """`10%` or `0.10` -> 0.10. A bare number of 1 or more is refused (KIP-166's tool takes percent, so `10`
    most likely meant 10%); so is a negative one."""
    raw = text.strip()
    percent = raw.endswith("%")
    try:
        value = float(raw[:-1] if percent else raw)
    except ValueError:
        raise ValueError(
            f"threshold must be a share such as 0.10 or a percentage such as 10%, got {text!r}"
        ) from None
    if not math.isfinite(value):
        raise ValueError(f"threshold must be a finite number, got {text!r}")
    if value < 0:
        raise ValueError(f"threshold must not be negative, got {text!r}")
    if percent:
        if value >= 100:
            raise ValueError(f"threshold must be below 100%, got {text!r}")
        return value / 100
    if value >= 1:
        raise ValueError(
            f"threshold {text!r} is not a share of the average (0 <= t < 1); "
            f"for {value:g} percent write {value:g}% (= {value / 100:g})"
        )
    return value


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@dataclass(frozen=True)
class PlanRequest:
    goal: str
    threshold: float = 0.10
    brokers: tuple[int, ...] = ()
    size_aware: bool = False
    seed: int = 0
    max_rounds: int = 12
    leader_threshold: float = 0.0
    byte_threshold: float = 0.10
    topics: str | None = None
    exclude_topics: str | None = None
    exclude_brokers: tuple[int, ...] = ()
    capacities: Capacities | None = None
    leaders: bool | None = None
    """Balance preferred leaders too: None is the goal's default (LEADER_GOALS); True asks for it (then it
    is a goal the plan is judged by), False leaves preferred leaders alone."""

    def check(self) -> None:
        problems = []
        if self.goal not in GOALS:
            problems.append(Problem("plan", "goal", f"must be one of {list(GOALS)}, got {self.goal!r}"))
        if not 0 <= self.threshold < 1:
            problems.append(Problem("plan", "threshold", f"must be in [0, 1), got {self.threshold}"))
        if not 0 <= self.byte_threshold < 1:
            problems.append(
                Problem("plan", "byte_threshold", f"must be in [0, 1), got {self.byte_threshold}")
            )
        if not 0 <= self.leader_threshold < 1:
            problems.append(
                Problem("plan", "leader_threshold", f"must be in [0, 1), got {self.leader_threshold}")
            )
        if self.goal in ("drain", "fill") and not self.brokers:
            problems.append(Problem("plan", "brokers", f"goal {self.goal} needs the brokers to {self.goal}"))
        if self.goal == "leader-balance" and self.leaders is False:
            problems.append(
                Problem(
                    "plan", "leaders", "leader-balance balances preferred leaders: leave out --no-leaders"
                )
            )
        if self.max_rounds < 1:
            problems.append(Problem("plan", "max_rounds", f"must be >= 1, got {self.max_rounds}"))
        if self.goal == "fill" and set(self.brokers) & set(self.exclude_brokers):
            both = sorted(set(self.brokers) & set(self.exclude_brokers))
            problems.append(
                Problem("plan", "exclude_brokers", f"broker(s) {both} are both filled and excluded")
            )
        for name in ("topics", "exclude_topics"):
            pattern = getattr(self, name)
            if pattern is None:
                continue
            try:
                _compiled(pattern)
            except re.error as exc:
                problems.append(Problem("plan", name, f"invalid regular expression {pattern!r}: {exc}"))
        if problems:
            raise InvalidInputError("plan request", problems)

    def topic_filter(self) -> Callable[[str], bool]:
        """Whether a topic's partitions may move: it matches `topics` (when given), not `exclude_topics`."""
        include = _compiled(self.topics) if self.topics is not None else None
        exclude = _compiled(self.exclude_topics) if self.exclude_topics is not None else None

        def selected(topic: str) -> bool:
            if include is not None and include.fullmatch(topic) is None:
                return False
            return exclude is None or exclude.fullmatch(topic) is None

        return selected

    @property
    def moves_replicas(self) -> bool:
        return self.goal in REPLICA_GOALS

    @property
    def balances_leaders(self) -> bool:
        return self.goal in LEADER_GOALS if self.leaders is None else self.leaders

    @property
    def leaders_asked(self) -> bool:
        """Whether leader balance is a goal the plan is judged by (else best effort, or not done)."""
        return self.goal in ("leader-balance", "cluster-balance") or self.leaders is True


_REQUEST_FIELDS = {
    "goal",
    "threshold",
    "byte_threshold",
    "brokers",
    "exclude_brokers",
    "topics",
    "exclude_topics",
    "size_aware",
    "leaders",
    "seed",
    "max_rounds",
    "capacity",
}


def request_from_json(doc: object, capacities: Capacities | None = None) -> PlanRequest:
    """A plan request from JSON (the HTTP API's proposals): the CLI's options by their long names, with
    thresholds as numbers or percentages ("10%") and an optional inline `capacity` document in either
    capacity format (else `capacities`). Every problem is named at once."""
    from reassignd.placement.capacity import parse_capacities

    if not isinstance(doc, dict):
        raise InvalidInputError("plan request", [Problem("request", "(document)", "must be a JSON object")])
    problems: list[Problem] = []
    unknown = sorted(set(doc) - _REQUEST_FIELDS)
    if unknown:
        problems.append(Problem("request", "(document)", f"unknown field(s) {unknown}"))
    values: dict[str, object] = {}
    if doc.get("goal") not in GOALS:
        problems.append(
            Problem("request", "goal", f"required, one of {list(GOALS)}, got {doc.get('goal')!r}")
        )
    else:
        values["goal"] = doc["goal"]
    # a field given as null is refused (openapi.json marks none of them nullable), never taken as absent
    for name in ("threshold", "byte_threshold"):
        if name not in doc:
            continue
        raw = doc[name]
        if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
            problems.append(Problem("request", name, f"a share (0.10) or a percentage ('10%'), got {raw!r}"))
            continue
        try:
            values[name] = parse_threshold(str(raw))
        except ValueError as exc:
            problems.append(Problem("request", name, str(exc)))
    for name in ("brokers", "exclude_brokers"):
        if name not in doc:
            continue
        raw = doc[name]
        if not isinstance(raw, list) or not all(isinstance(b, int) and not isinstance(b, bool) for b in raw):
            problems.append(Problem("request", name, f"must be a list of broker ids, got {raw!r}"))
        else:
            values[name] = tuple(raw)
    for name in ("topics", "exclude_topics"):
        raw = doc.get(name)
        if name in doc and not isinstance(raw, str):
            problems.append(Problem("request", name, f"must be a regular expression (string), got {raw!r}"))
        elif name in doc:
            values[name] = raw
    if "size_aware" in doc:
        if not isinstance(doc["size_aware"], bool):
            problems.append(
                Problem("request", "size_aware", f"must be true or false, got {doc['size_aware']!r}")
            )
        else:
            values["size_aware"] = doc["size_aware"]
    if "leaders" in doc:
        if not isinstance(doc["leaders"], bool):
            problems.append(Problem("request", "leaders", f"must be true or false, got {doc['leaders']!r}"))
        else:
            values["leaders"] = doc["leaders"]
    for name in ("seed", "max_rounds"):
        if name not in doc:
            continue
        raw = doc[name]
        if not isinstance(raw, int) or isinstance(raw, bool):
            problems.append(Problem("request", name, f"must be an integer, got {raw!r}"))
        else:
            values[name] = raw
    if "capacity" in doc and not isinstance(doc["capacity"], dict):
        problems.append(
            Problem("request", "capacity", f"must be a capacity document, got {doc['capacity']!r}")
        )
    elif "capacity" in doc:
        try:
            values["capacities"] = parse_capacities(doc["capacity"], "capacity")
        except InvalidInputError as exc:
            problems.extend(exc.problems)
    elif capacities is not None:
        values["capacities"] = capacities
    if problems:
        raise InvalidInputError("plan request", problems)
    request = PlanRequest(**values)  # type: ignore[arg-type]
    request.check()
    return request
