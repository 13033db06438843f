"""What the cluster is reassigning, ours and foreign, and the cancel of the foreign ones (KIP-455), for the
controller's API: `GET /v1/reassignments` and `POST /v1/reassignments/cancel` (the selection rules are in
daemon/foreign.py). Ours are the partitions of the plan in progress, as the controller's view shows them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassignd.cluster.api import ClusterAdmin, Reassignment
from reassignd.cluster.errors import ClusterCallError
from reassignd.daemon import foreign
from reassignd.daemon.service import JSON, ServiceError
from reassignd.daemon.view import ControllerView
from reassignd.engine.journal import Event, EventKind
from reassignd.logs import get_logger
from reassignd.model import TopicPartition
from reassignd.store.aio import AsyncStore
from reassignd.store.base import WriteBatch

log = get_logger("reassignd.controller")


def _row(tp: TopicPartition, r: Reassignment) -> JSON:
    return {
        "topic": tp.topic,
        "partition": tp.partition,
        "replicas": list(r.replicas),
        "adding": list(r.adding),
        "removing": list(r.removing),
    }


async def _ongoing(cluster: ClusterAdmin) -> Mapping[TopicPartition, Reassignment]:
    try:
        return await cluster.list_partition_reassignments(None)
    except ClusterCallError as exc:
        raise ServiceError("unavailable", f"cannot list reassignments: {exc}") from None


async def listed(cluster: ClusterAdmin, view: ControllerView) -> list[JSON]:
    """Every reassignment the cluster lists, each with its owner: reassignd's running plan, or foreign."""
    ongoing = await _ongoing(cluster)
    ours = view.ours()
    return [
        {**_row(tp, r), "owner": "reassignd" if tp in ours else "foreign", "plan_id": ours.get(tp)}
        for tp, r in sorted(ongoing.items())
    ]


async def cancel_foreign(
    cluster: ClusterAdmin, store: AsyncStore, view: ControllerView, request: Mapping[str, Any]
) -> JSON:
    """KIP-455 cancel of reassignments reassignd does not own, chosen by `request` (daemon/foreign.py);
    journaled as foreign.cancelled with what each partition was doing. The caller holds the cycle lock,
    so the plan in progress cannot change meanwhile."""
    selection = foreign.parse_request(request)
    ongoing = await _ongoing(cluster)
    ours = view.ours()
    chosen, skipped = foreign.select(selection, ongoing, ours)
    try:
        results = await cluster.alter_partition_reassignments(dict.fromkeys(chosen))
    except ClusterCallError as exc:
        raise ServiceError("unavailable", f"cannot cancel reassignments: {exc}") from None
    cancelled = [_row(tp, ongoing[tp]) for tp in chosen if results.get(tp) is None]
    failed = [
        {**_row(tp, ongoing[tp]), "error": str(results[tp])} for tp in chosen if results.get(tp) is not None
    ]
    answer: JSON = {
        "cancelled": cancelled,
        "failed": failed,
        "skipped": [{"topic": tp.topic, "partition": tp.partition, "plan_id": ours[tp]} for tp in skipped],
    }
    if chosen:
        data = {**answer, "topics": request.get("topics"), "by": "operator"}
        await store.commit(WriteBatch().append(Event(EventKind.FOREIGN_CANCELLED, data=data)))
        log.warning(
            "foreign reassignments cancelled",
            cancelled=len(cancelled),
            failed=len(failed),
            partitions=[f"{e['topic']}-{e['partition']}" for e in cancelled[:20]],
        )
    return answer
