"""Self-healing's partition-level and balance detectors, pure: what one snapshot of the cluster shows
(engine/anomalies.py times the findings and keeps the anomalies; daemon/healing.py reads the cluster).

- `rack_spread`: partitions whose replicas span fewer racks or data centres than the placer could give
  them over the cluster's racks as they are (the online brokers not decommissioned; placement/respread.py).
- `replica_balance`, `leader_balance`: a broker's replicas, or preferred leaderships, outside the band of
  the planner's balance goal at `self.healing.balance.threshold` (placement/balance.py's `outside_band`,
  the formula the planner's own figures use), counted over the same brokers the planner balances.
- `under_replicated`: partitions whose ISR is short of their replicas while every replica's broker is
  online (a broker down is `broker_failure`'s).
- `log_dir_offline`: each log dir of a running broker that DescribeLogDirs answered KAFKA_STORAGE_ERROR
  (`log_dir_offline`, judged always, a reassignment in flight or not, as the broker-level kinds are).

While a partition is being reassigned its replica lists are in between: the partition and balance kinds
are then not judged (`unjudged`), so a plan that runs neither makes nor expires their anomalies.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from reassignd.engine.anomalies import CLUSTER, AnomalyKind, Finding, dir_subject
from reassignd.model import ClusterSnapshot, TopicPartition
from reassignd.placement.balance import outside_band
from reassignd.placement.respread import uneven_partitions

SNAPSHOT_KINDS = frozenset(
    {
        AnomalyKind.RACK_SPREAD,
        AnomalyKind.REPLICA_BALANCE,
        AnomalyKind.LEADER_BALANCE,
        AnomalyKind.BYTE_BALANCE,
        AnomalyKind.DISK_CAPACITY,
        AnomalyKind.UNDER_REPLICATED,
    }
)
"""The kinds judged from the partitions of one snapshot (this module)."""
SIZED_KINDS = frozenset({AnomalyKind.BYTE_BALANCE, AnomalyKind.DISK_CAPACITY, AnomalyKind.LOG_DIR_OFFLINE})
"""The kinds judged on what DescribeLogDirs says (the partitions' sizes, the dirs' volumes and errors):
the snapshot is read with the sizes."""


def eligible_brokers(snapshot: ClusterSnapshot, banned: Collection[int]) -> frozenset[int]:
    """The brokers a fix may place on: online, not decommissioned."""
    return snapshot.online_broker_ids() - frozenset(banned)


def detect(
    snapshot: ClusterSnapshot,
    banned: Collection[int],
    kinds: Collection[AnomalyKind],
    threshold: float,
    *,
    byte_threshold: float = 0.10,
    disk_threshold: float = 0.80,
) -> tuple[list[Finding], frozenset[AnomalyKind]]:
    """(findings, unjudged kinds) for the enabled `kinds` of this module: the balance goals' bands at
    `threshold`, the byte band at `byte_threshold`, the volumes' use at `disk_threshold`."""
    wanted = frozenset(kinds) & SNAPSHOT_KINDS
    if any(p.is_reassigning for p in snapshot.partitions.values()):
        return [], wanted
    eligible = eligible_brokers(snapshot, banned)
    found: list[Finding | None] = []
    if AnomalyKind.RACK_SPREAD in wanted:
        found.append(rack_spread(snapshot, eligible))
    for kind in (AnomalyKind.REPLICA_BALANCE, AnomalyKind.LEADER_BALANCE, AnomalyKind.BYTE_BALANCE):
        if kind in wanted:
            band = byte_threshold if kind is AnomalyKind.BYTE_BALANCE else threshold
            found.append(unbalanced(snapshot, eligible, kind, band))
    if AnomalyKind.DISK_CAPACITY in wanted:
        found.append(disk_capacity(snapshot, disk_threshold))
    if AnomalyKind.UNDER_REPLICATED in wanted:
        found.append(under_replicated(snapshot))
    return [f for f in found if f is not None], frozenset()


def _finding(kind: AnomalyKind, partitions: Mapping[TopicPartition, tuple[int, ...]]) -> Finding | None:
    if not partitions:
        return None
    brokers = tuple(sorted({b for rs in partitions.values() for b in rs}))
    return Finding(kind, CLUSTER, brokers, {str(tp): tuple(rs) for tp, rs in sorted(partitions.items())})


def rack_spread(snapshot: ClusterSnapshot, eligible: frozenset[int]) -> Finding | None:
    replicas = {tp: p.replicas for tp, p in snapshot.partitions.items()}
    racks = {b: broker.rack for b, broker in snapshot.brokers.items()}
    uneven = uneven_partitions(replicas, racks, eligible)
    return _finding(AnomalyKind.RACK_SPREAD, {tp: replicas[tp] for tp in uneven})


def balance_loads(snapshot: ClusterSnapshot, eligible: frozenset[int], kind: AnomalyKind) -> dict[int, int]:
    """Replicas (`replica_balance`) or preferred leaderships (`leader_balance`) per eligible broker: the
    loads the planner balances (its members: online, not excluded)."""
    loads = dict.fromkeys(eligible, 0)
    for p in snapshot.partitions.values():
        held = p.replicas[:1] if kind is AnomalyKind.LEADER_BALANCE else p.replicas
        for b in held:
            if b in loads:
                loads[b] += 1
    return loads


def byte_loads(snapshot: ClusterSnapshot, eligible: frozenset[int]) -> dict[int, int]:
    """Bytes per eligible broker as the planner's byte goal weighs them: each replica its partition's size
    (placement/assignment.py, `size_bytes`)."""
    loads = dict.fromkeys(eligible, 0)
    for p in snapshot.partitions.values():
        for b in p.replicas:
            if b in loads:
                loads[b] += p.size_bytes
    return loads


def unbalanced(
    snapshot: ClusterSnapshot, eligible: frozenset[int], kind: AnomalyKind, threshold: float
) -> Finding | None:
    """The brokers outside the goal's band, or None when the goal holds."""
    if kind is AnomalyKind.BYTE_BALANCE:
        loads = byte_loads(snapshot, eligible)
    else:
        loads = balance_loads(snapshot, eligible, kind)
    _, outside = outside_band(loads, threshold)
    return Finding(kind, CLUSTER, tuple(outside)) if outside else None


def volumes(snapshot: ClusterSnapshot) -> dict[int, tuple[int, int]]:
    """(total, used) bytes of each online broker's log-dir volumes, summed, where the broker said."""
    online = snapshot.online_broker_ids()
    out: dict[int, tuple[int, int]] = {}
    for (broker, _), (total, usable) in snapshot.dir_volumes.items():
        if broker in online and total > 0 and usable >= 0:
            had_total, had_used = out.get(broker, (0, 0))
            out[broker] = (had_total + total, had_used + total - usable)
    return out


def disk_capacity(snapshot: ClusterSnapshot, threshold: float) -> Finding | None:
    """The online brokers whose volumes are used beyond `threshold` of their total, or None."""
    over = tuple(sorted(b for b, (total, used) in volumes(snapshot).items() if used > threshold * total))
    return Finding(AnomalyKind.DISK_CAPACITY, CLUSTER, over) if over else None


def disk_limits(snapshot: ClusterSnapshot, threshold: float) -> dict[int, float]:
    """The bytes of replicas each broker may hold, as the planner counts them (its partitions' sizes), so
    that its volumes stay within `threshold`: the threshold's share of the total less the other data on
    them (what is used beyond the replicas the planner counts: other topics' logs, files)."""
    counted = dict.fromkeys(volumes(snapshot), 0)
    for p in snapshot.partitions.values():
        for b in p.replicas:
            if b in counted:
                counted[b] += p.size_bytes
    return {
        b: max(0.0, threshold * total - max(0, used - counted[b]))
        for b, (total, used) in volumes(snapshot).items()
    }


def under_replicated(snapshot: ClusterSnapshot) -> Finding | None:
    online = snapshot.online_broker_ids()
    short = {
        tp: p.replicas
        for tp, p in snapshot.partitions.items()
        if len(set(p.isr) & set(p.replicas)) < len(p.replicas) and set(p.replicas) <= online
    }
    return _finding(AnomalyKind.UNDER_REPLICATED, short)


def elections(
    snapshot: ClusterSnapshot, partitions: Collection[str]
) -> tuple[dict[TopicPartition, tuple[int, ...]], list[str]]:
    """The under-replicated fix: of `partitions` ("topic-partition"), those whose leader is not their
    preferred replica while the preferred is in sync (their target: the replicas as they are, so the plan
    moves nothing and ends in a preferred-leader election); and, for the others, what to check."""
    wanted = set(partitions)
    elect: dict[TopicPartition, tuple[int, ...]] = {}
    checks: list[str] = []
    for tp, p in sorted(snapshot.partitions.items()):
        if str(tp) not in wanted:
            continue
        preferred = p.replicas[0] if p.replicas else None
        if preferred is not None and p.leader != preferred and preferred in p.isr:
            elect[tp] = p.replicas
            continue
        lagging = sorted(set(p.replicas) - set(p.isr))
        checks.append(f"{tp}: replica(s) on broker(s) {lagging} out of sync (leader {p.leader})")
    return elect, checks


def urp_advice(checks: list[str]) -> str:
    """What the operator checks when no election helps: no plan moves data blindly to a lagging replica."""
    named = "; ".join(checks[:5]) + (f"; and {len(checks) - 5} more" if len(checks) > 5 else "")
    return (
        f"no fix moves data for this: {named}. Check the lagging brokers' logs and disks (an offline "
        "log dir, a full disk), their replica fetchers and the network to the leader, and any follower "
        "throttle left "
        "on the topic (leader.replication.throttled.replicas / follower.replication.throttled.replicas)"
    )


def log_dir_offline(snapshot: ClusterSnapshot) -> list[Finding]:
    """One finding per failed log dir of a running broker (`snapshot.offline_dirs`: DescribeLogDirs'
    KAFKA_STORAGE_ERROR), listing the partitions whose replica on that broker is in it.

    A failed dir lists no partition (ReplicaManager.describeLogDirs), so a replica is taken to be in it when
    the broker's answering dirs do not list it (`replica_dirs`) and it is out of the ISR (the controller
    takes it out: ReplicationControlManager.handleDirectoriesOffline, KafkaController.
    onReplicasBecomeOffline); a replica being added is not counted (it may not be created yet). Nothing
    says which of two failed dirs of one broker held a replica: the first of them (by path) lists them
    all, the others none, and its `log_dir` names every failed dir of the broker, comma-separated as
    `log.dirs` lists them (no path holds a comma)."""
    online = snapshot.online_broker_ids()
    failed: dict[int, list[str]] = {}
    for broker, path in sorted(snapshot.offline_dirs):
        if broker in online:
            failed.setdefault(broker, []).append(path)
    found = []
    for broker, paths in sorted(failed.items()):
        held = {
            tp: p.replicas
            for tp, p in sorted(snapshot.partitions.items())
            if broker in p.replicas
            and broker not in p.isr
            and broker not in p.adding
            and (tp, broker) not in snapshot.replica_dirs
        }
        for index, path in enumerate(paths):
            listed = {str(tp): tuple(rs) for tp, rs in held.items()} if index == 0 else {}
            named = ",".join(paths) if index == 0 else path  # its replicas may be in any of them
            subject = dir_subject(broker, path)
            found.append(Finding(AnomalyKind.LOG_DIR_OFFLINE, subject, (broker,), listed, log_dir=named))
    return found
