"""Checks of a (fleet) snapshot before planning; every problem found is reported at once (up to 25).

Broker rows are checked on the driver (they are few); partition rows inside the planning job, per
cluster, before the cluster is planned: a run costs one Spark job for both instead of a job per check.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from reassignd.model import Problem

MAX_REPORTED = 25


def broker_problems(rows: Iterable[Any]) -> list[Problem]:
    """Duplicate or negative broker ids, from (cluster, broker) rows."""
    problems: list[Problem] = []
    seen: set[tuple[str, int]] = set()
    for row in rows:
        cluster, broker = str(row["cluster"]), row["broker"]
        if broker is None or int(broker) < 0:
            problems.append(Problem(f"{cluster}: brokers", "id", "must be a non-negative integer"))
            continue
        key = (cluster, int(broker))
        if key in seen:
            problems.append(Problem(f"{cluster}: broker {broker}", "id", "duplicate broker id"))
        seen.add(key)
    return problems[:MAX_REPORTED]


def partition_problems(
    cluster: str,
    *,
    topics: Sequence[str],
    numbers: Sequence[int],
    replicas: Sequence[Any],
    leaders: Sequence[Any],
    sizes: Sequence[Any],
    brokers: set[int],
) -> list[Problem]:
    """Duplicate partitions, empty or duplicated replica lists, unknown brokers, leaders outside the
    replicas, negative sizes: the same rules as the snapshot model (reassignd/model.py)."""
    problems: list[Problem] = []
    seen: set[tuple[str, int]] = set()
    for topic, number, listed, leader, size in zip(topics, numbers, replicas, leaders, sizes, strict=True):
        where = f"{cluster}: {topic}-{number}"
        key = (topic, int(number))
        if key in seen:
            problems.append(Problem(where, "partition", "duplicate entry"))
        seen.add(key)
        if (  # the common case, decided without converting anything
            listed is not None
            and len(listed)
            and len(set(listed)) == len(listed)
            and brokers.issuperset(listed)
            and (leader is None or leader == -1 or leader in set(listed))
            and (size is None or size >= 0)
        ):
            continue
        ids = None if listed is None else [None if r is None else int(r) for r in listed]
        if not ids or len(set(ids)) != len(ids) or any(r is None or r < 0 for r in ids):
            problems.append(
                Problem(where, "replicas", f"must be distinct non-negative broker ids, got {ids}")
            )
        else:
            problems.extend(
                Problem(where, "replicas", f"unknown broker id {r}") for r in ids if r not in brokers
            )
            if leader is not None and int(leader) != -1 and int(leader) not in ids:
                problems.append(Problem(where, "leader", f"leader {int(leader)} is not one of the replicas"))
        if size is not None and int(size) < 0:
            problems.append(Problem(where, "size_bytes", "must not be negative"))
        if len(problems) >= MAX_REPORTED:
            break
    return problems[:MAX_REPORTED]
