"""Runs the plan-run machine against a cluster model that answers at once: the dry run and rehearsals.

The daemon's controller executes the machine's effects against Kafka and the store; a model executes the
same effects against a simulated copy of the cluster (the simulator's model for rehearsals, the instant
fake for dry runs). Persisting has nowhere to go: the effects of each cycle are handed to the caller,
which reads what it wants from them (steps started, bytes moved per broker).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from reassignd.engine.run import Observed, ReadRequest, RunState, Settings, Transition, read_request, step
from reassignd.engine.run.effects import (
    Answered,
    Answers,
    Effect,
    Elect,
    MoveLogDirs,
    Reassign,
    WriteThrottles,
    carrier_of,
)
from reassignd.model import ClusterSnapshot, TopicPartition


class Model(Protocol):
    """A cluster that answers a plan run's reads and writes at once (effects.py's CARRIED_BY names the
    methods; persisting, notifying and logging have nowhere to go)."""

    def read(self, request: ReadRequest) -> ClusterSnapshot: ...

    def min_insync(self, topics: Collection[str]) -> Mapping[str, str]: ...

    def write_throttles(self, effect: WriteThrottles) -> Mapping[tuple[str, str], str]: ...

    def reassign(self, effect: Reassign) -> Mapping[TopicPartition, str | None]: ...

    def elect(self, effect: Elect) -> Mapping[TopicPartition, str | None]: ...

    def move_log_dirs(self, effect: MoveLogDirs) -> Mapping[tuple[TopicPartition, int], str | None]: ...


@dataclass(frozen=True, slots=True)
class Cycle:
    run: RunState
    effects: tuple[Effect, ...]
    """Every effect of the cycle, in order (observation, answers, elections)."""

    @property
    def acted(self) -> bool:
        """Whether the cycle wrote anything to the cluster, or saw something end."""
        for effect in self.effects:
            if isinstance(effect, WriteThrottles | Reassign | MoveLogDirs | Elect):
                return True
            if getattr(effect, "events", ()) or getattr(effect, "status", None):
                return True
        return False


def cycle(run: RunState, model: Model, settings: Settings, now: float) -> Cycle:
    """One cycle of the machine on `model`: observe, carry out, answer, until nothing is awaited."""
    request = read_request(run, settings)
    snapshot = model.read(request)
    observed = Observed(now, snapshot, request, dict(model.min_insync(request.min_insync_topics)))
    transition: Transition = step(run, observed, settings)
    effects: list[Effect] = []
    while True:
        effects += transition.effects
        answered = execute(model, transition.effects, now)
        if not transition.awaits_answer:
            return Cycle(transition.run, tuple(effects))
        transition = step(transition.run, answered, settings)


def execute(model: Model, effects: tuple[Effect, ...], now: float) -> Answered:
    answers = Answers()
    for effect in effects:
        carry_out = carrier_of(model, effect)
        if carry_out is not None:
            answers.add(effect, carry_out(effect))
    return answers.answered(now)
