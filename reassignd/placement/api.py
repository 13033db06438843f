"""Choosing a placer by name and the CreateReplicaPlacement call (KIP-879's Admin API, as a pure function).

Placers are found by entry-point name in the `reassignd.placers` group, the way Kafka would load the
class named by `broker.replica.placer`; a third-party package registers its own the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any, Final, cast

from reassignd.model import ClusterSnapshot, InvalidInputError, Problem
from reassignd.placement.base import ClusterView, PlacementSpec, PlacerFactory, ReplicaPlacer
from reassignd.placement.kafka import KafkaDefaultPlacer

GROUP: Final = "reassignd.placers"
CONFIG_KEY: Final = "broker.replica.placer"
DEFAULT_PLACER: Final = "multi-level"
_FIELDS: Final = {
    "num_partitions",
    "replication_factor",
    "force_simple_placement",
    "broker_ids",
    "placer",
    "seed",
}


def placer_names() -> list[str]:
    return sorted(ep.name for ep in entry_points(group=GROUP))


def load_placer(name: str, *, seed: int | None = None) -> ReplicaPlacer:
    found = [ep for ep in entry_points(group=GROUP) if ep.name == name]
    if not found:
        raise InvalidInputError(
            "replica placement",
            [
                Problem(
                    "placement", "placer", f"no placer named {name!r} (known: {', '.join(placer_names())})"
                )
            ],
        )
    factory = cast(PlacerFactory, found[0].load())
    return factory(seed=seed)


def default_placer_name(snapshot: ClusterSnapshot) -> str:
    """The cluster's `broker.replica.placer` when the snapshot carries it, else multi-level."""
    return snapshot.cluster_configs.get(CONFIG_KEY) or DEFAULT_PLACER


def _int_field(
    request: Mapping[str, Any], key: str, problems: list[Problem], *, required: bool
) -> int | None:
    if key not in request:  # null is not absent: it is refused below, as the document has it
        if required:
            problems.append(Problem("request", key, "is required"))
        return None
    value = request[key]
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(Problem("request", key, f"must be an integer, got {value!r}"))
        return None
    return value


def create_replica_placement(snapshot: ClusterSnapshot, request: Mapping[str, Any]) -> dict[str, Any]:
    """CreateReplicaPlacement: `{num_partitions, replication_factor, force_simple_placement?, broker_ids?,
    placer?, seed?}` -> `{"placer", "deferred", "replica_placement": [{"partition_id", "replicas"}]}`.

    forceSimplePlacement selects Kafka's rack-unaware algorithm; a placer returning None defers to it too.
    """
    problems: list[Problem] = []
    if not isinstance(request, Mapping):
        raise InvalidInputError("replica placement", [Problem("request", "(body)", "must be an object")])
    unknown = sorted(set(request) - _FIELDS)
    if unknown:
        problems.append(Problem("request", ", ".join(unknown), f"unknown field(s); known: {sorted(_FIELDS)}"))
    num_partitions = _int_field(request, "num_partitions", problems, required=True)
    replication_factor = _int_field(request, "replication_factor", problems, required=True)
    seed = _int_field(request, "seed", problems, required=False)
    force = request.get("force_simple_placement", False)
    if not isinstance(force, bool):
        problems.append(Problem("request", "force_simple_placement", f"must be true or false, got {force!r}"))
    raw_ids = request.get("broker_ids")
    broker_ids: list[int] | None = None
    if "broker_ids" in request:
        if not isinstance(raw_ids, list) or not all(
            isinstance(b, int) and not isinstance(b, bool) for b in raw_ids
        ):
            problems.append(
                Problem("request", "broker_ids", f"must be a list of broker ids, got {raw_ids!r}")
            )
        else:
            broker_ids = list(raw_ids)
    name = request.get("placer")
    if "placer" in request and not isinstance(name, str):
        problems.append(Problem("request", "placer", f"must be a string, got {name!r}"))
    if problems:
        raise InvalidInputError("replica placement", problems)
    assert num_partitions is not None and replication_factor is not None
    spec = PlacementSpec(num_partitions, replication_factor)
    view = ClusterView.from_snapshot(snapshot)
    chosen = name if isinstance(name, str) else default_placer_name(snapshot)
    placer: ReplicaPlacer = KafkaDefaultPlacer(seed=seed) if force else load_placer(chosen, seed=seed)
    assignment = placer.place(spec, view, broker_ids)
    deferred = assignment is None
    if assignment is None:
        placer = KafkaDefaultPlacer(seed=seed)
        assignment = placer.place(spec, view, broker_ids)
        assert assignment is not None
    return {
        "placer": placer.name,
        "deferred": deferred,
        "replica_placement": [
            {"partition_id": index, "replicas": list(replicas)} for index, replicas in enumerate(assignment)
        ],
    }
