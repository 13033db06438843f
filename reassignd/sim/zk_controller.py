"""Partition-change rules of the ZooKeeper-mode controller (Kafka 3.x with `zookeeper.connect`), pure.

Ported from apache/kafka branch 3.9 (the last with ZooKeeper mode), core/src/main/scala/kafka/controller/:
- ControllerContext.scala `ReplicaAssignment`: origin = replicas - adding, target = replicas - removing;
  `reassignTo(T)`: replicas = (T ++ origin).distinct, adding = that - origin, removing = that - T, all in
  that order (not sorted, unlike KRaft). A new target or a cancel is computed from the ORIGIN replicas.
- KafkaController.scala `validateReplicas`: empty, duplicate and negative targets are refused with their own
  texts; the replicas a target ADDS must be alive (registered in ZooKeeper), else "Replica assignment has
  brokers that are not alive". A stopped broker that is already a replica may stay in the target.
- `onPartitionReassignment`: U) replicas the new assignment no longer has are stopped (OfflineReplica: out of
  the ISR); A) not complete: bump the leader epoch; B) complete (target within the ISR, or nothing to move):
  `moveReassignedPartitionLeaderIfRequired`, then every removed replica leaves the ISR.
- ReplicaStateMachine.scala `doRemoveReplicasFromIsr`: the leader becomes -1 if it is the replica removed;
  the last ISR member is never removed.
- Election.scala / PartitionStateMachine.scala: offline election (first replica alive and in the ISR, ISR =
  its live members; unclean: first live replica, ISR = [it]); reassignment election (first TARGET replica
  alive and in the ISR); preferred election (the first replica, if alive and in the ISR); a failed election
  is "Failed to elect leader for partition T-P under strategy S".
- LeaderAndIsr: every controller write bumps the leader epoch (newEpoch, newLeader, newLeaderAndIsr); an ISR
  expansion by the leader (AlterPartition) does not. Every write bumps the partition epoch (the znode
  version).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from reassignd.sim import errors
from reassignd.sim.errors import KafkaError
from reassignd.sim.reassignment import NO_LEADER, PartitionChange, PartitionFields

Alive = Callable[[int], bool]

PREFERRED_STRATEGY = "PreferredReplicaPartitionLeaderElectionStrategy"
ADMIN_UNCLEAN_STRATEGY = "OfflinePartitionLeaderElectionStrategy(true)"


def origin_replicas(replicas: Sequence[int], adding: Sequence[int]) -> tuple[int, ...]:
    return tuple(r for r in replicas if r not in adding)


def target_replicas(replicas: Sequence[int], removing: Sequence[int]) -> tuple[int, ...]:
    return tuple(r for r in replicas if r not in removing)


def reassign_to(
    replicas: Sequence[int], adding: Sequence[int], target: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """ReplicaAssignment.reassignTo: (replicas, adding, removing), computed from the origin replicas."""
    origin = origin_replicas(replicas, adding)
    full = tuple(dict.fromkeys((*target, *origin)))
    return full, tuple(r for r in full if r not in origin), tuple(r for r in full if r not in target)


# ---------------------------------------------------------------------------------------------------------
# How Scala prints the collections in these messages (Scala 2.13, the build Kafka ships)


def scala_buffer(values: Iterable[int]) -> str:
    """A target as KafkaApis builds it (`replicas.asScala.map(_.toInt)`): an ArrayBuffer."""
    return f"ArrayBuffer({', '.join(str(v) for v in values)})"


def _champ_hash(h: int) -> int:
    """scala.collection.Hashing.improve, which orders an immutable HashSet (32-bit arithmetic)."""
    h &= 0xFFFFFFFF
    h = (h + (~(h << 9) & 0xFFFFFFFF)) & 0xFFFFFFFF
    h ^= h >> 14
    h = (h + (h << 4)) & 0xFFFFFFFF
    return h ^ (h >> 10)


def _champ_order(ids: list[int], shift: int = 0) -> list[int]:
    """Iteration order of a CHAMP HashSet: this level's single entries by 5-bit fragment, then sub-tries."""
    if len(ids) <= 1 or shift >= 32:
        return sorted(ids)
    slots: dict[int, list[int]] = {}
    for i in ids:
        slots.setdefault((_champ_hash(i) >> shift) & 31, []).append(i)
    singles = [v[0] for _, v in sorted(slots.items()) if len(v) == 1]
    nested = [_champ_order(v, shift + 5) for _, v in sorted(slots.items()) if len(v) > 1]
    return singles + [i for group in nested for i in group]


def scala_int_set(ids: Iterable[int]) -> str:
    """`controllerContext.liveBrokerIds` as printed: Set(...) up to four members, else HashSet(...).

    Up to four the order is the live-broker map's iteration order (hash buckets: ascending for small ids);
    beyond, the HashSet's own (CHAMP) order.
    """
    members = sorted(set(ids))
    if len(members) <= 4:
        capacity = 16
        while len(members) > capacity * 3 // 4:
            capacity *= 2
        ordered = sorted(members, key=lambda i: ((i ^ (i >> 16)) & (capacity - 1), i))
        return f"Set({', '.join(map(str, ordered))})"
    return f"HashSet({', '.join(map(str, _champ_order(members)))})"


def validate_target(
    replicas: Sequence[int], adding: Sequence[int], target: Sequence[int], live: Iterable[int]
) -> KafkaError | None:
    """KafkaController.validateReplicas; `replicas`/`adding` are empty for an unknown partition."""
    if not target:
        return KafkaError(
            errors.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment."
        )
    if len(set(target)) != len(target):
        return KafkaError(
            errors.INVALID_REPLICA_ASSIGNMENT,
            f"Duplicate replica ids in partition reassignment replica list: {scala_buffer(target)}",
        )
    if any(r < 0 for r in target):
        return KafkaError(
            errors.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {scala_buffer(target)}"
        )
    live_set = set(live)
    _, new_adding, _ = reassign_to(replicas, adding, target)
    if not set(new_adding) <= live_set:
        return KafkaError(
            errors.INVALID_REPLICA_ASSIGNMENT,
            "Replica assignment has brokers that are not alive. Replica list: "
            f"{scala_buffer(new_adding)}, live broker list: {scala_int_set(live_set)}",
        )
    return None


# ---------------------------------------------------------------------------------------------------------
# One partition's state through a sequence of controller writes


@dataclass(slots=True)
class ZkPartition:
    """A partition's assignment and LeaderAndIsr while the controller works on it; counts its writes."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    leader_epochs: int = 0  # leader-epoch bumps so far
    writes: int = 0  # partition-state znode writes so far
    unclean: bool = False
    _start: PartitionFields | None = field(default=None, repr=False)

    @classmethod
    def of(cls, fields: PartitionFields) -> ZkPartition:
        return cls(fields.replicas, fields.isr, fields.leader, fields.adding, fields.removing, _start=fields)

    def _write(self, leader: int, isr: Sequence[int], bump: bool = True) -> None:
        self.leader, self.isr = leader, tuple(isr)
        self.leader_epochs += int(bump)
        self.writes += 1

    @property
    def being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def change(self) -> PartitionChange | None:
        """The net result as one PartitionChange (None if nothing was written or reassigned)."""
        after = PartitionFields(self.replicas, self.isr, self.leader, self.adding, self.removing)
        if self._start is not None and after == self._start and self.writes == 0:
            return None
        return PartitionChange(
            after=after,
            leader_epoch_bump=self.leader_epochs > 0,
            unclean=self.unclean,
            leader_epoch_bumps=self.leader_epochs,
            partition_epoch_bumps=max(self.writes, 1),
        )

    # -- ReplicaStateMachine -------------------------------------------------------------------------------

    def remove_from_isr(self, replica: int) -> None:
        """OfflineReplica (doRemoveReplicasFromIsr): never empties the ISR; a removed leader becomes -1."""
        if replica not in self.isr:
            return
        leader = NO_LEADER if replica == self.leader else self.leader
        isr = self.isr if len(self.isr) == 1 else tuple(r for r in self.isr if r != replica)
        self._write(leader, isr)

    def shrink_isr(self, replica: int) -> None:
        """The leader's AlterPartition leaving out a follower out of sync: a write without a leader-epoch
        bump (the leader is not a follower of itself, so the ISR keeps at least the leader)."""
        if replica in self.isr and replica != self.leader:
            self._write(self.leader, [r for r in self.isr if r != replica], bump=False)

    def expand_isr(self, replica: int) -> None:
        """The leader's AlterPartition adding a caught-up follower: a write without a leader-epoch bump."""
        if replica not in self.isr:
            self._write(self.leader, (*self.isr, replica), bump=False)

    # -- elections -------------------------------------------------------------------------------------------

    def elect_offline(self, alive: Alive, unclean_allowed: bool) -> bool:
        """OfflinePartitionLeaderElection over all replicas; False (nothing written) if none qualifies."""
        leader = next((r for r in self.replicas if alive(r) and r in self.isr), NO_LEADER)
        if leader != NO_LEADER:
            self._write(leader, [r for r in self.isr if alive(r)])
            return True
        if unclean_allowed:
            leader = next((r for r in self.replicas if alive(r)), NO_LEADER)
            if leader != NO_LEADER:
                self._write(leader, [leader])
                self.unclean = True
                return True
        return False

    def elect_for_reassignment(self, alive: Alive) -> bool:
        """ReassignPartitionLeaderElection: the first target replica alive and in the ISR; ISR unchanged."""
        target = target_replicas(self.replicas, self.removing)
        leader = next((r for r in target if alive(r) and r in self.isr), NO_LEADER)
        if leader == NO_LEADER:
            return False
        self._write(leader, self.isr)
        return True

    def elect_preferred(self, alive: Alive) -> bool:
        preferred = self.replicas[0]
        if not (alive(preferred) and preferred in self.isr):
            return False
        self._write(preferred, self.isr)
        return True

    # -- KafkaController.onPartitionReassignment ------------------------------------------------------------

    def reassign(self, target: Sequence[int], alive: Alive) -> None:
        """Start, replace or cancel (target = origin) a reassignment; completes it if the ISR allows."""
        current = self.replicas
        self.replicas, self.adding, self.removing = reassign_to(self.replicas, self.adding, target)
        for replica in current:  # U: stop the replicas the new assignment no longer has
            if replica not in self.replicas:
                self.remove_from_isr(replica)
        self.resume(alive)

    def resume(self, alive: Alive) -> None:
        """onPartitionReassignment on the current assignment: phase A (epoch bump) or phase B (complete)."""
        target = target_replicas(self.replicas, self.removing)
        if self.being_reassigned and not set(target) <= set(self.isr):
            self._write(self.leader, self.isr)  # A1: updateLeaderEpoch
            return
        self.complete(alive)

    def maybe_complete(self, alive: Alive) -> None:
        """maybeCompleteReassignment after an ISR change: phase B once every target replica is in the ISR."""
        target = target_replicas(self.replicas, self.removing)
        if self.being_reassigned and set(target) <= set(self.isr):
            self.complete(alive)

    def complete(self, alive: Alive) -> None:
        """Phase B: replicas = target, leader moved if needed (B3), removed replicas out of the ISR (B4)."""
        removing = self.removing
        self.replicas = target_replicas(self.replicas, removing)
        self.adding = self.removing = ()
        if self.leader not in self.replicas or not alive(self.leader):
            self.elect_for_reassignment(alive)  # may fail: the partition then keeps no leader
        else:
            self._write(self.leader, self.isr)  # updateLeaderEpochAndSendRequest
        for replica in removing:
            self.remove_from_isr(replica)


def election_failed(code: int, topic: str, partition: int, strategy: str) -> KafkaError:
    """PartitionStateMachine's StateChangeFailedException, as the ElectLeaders result carries it."""
    return KafkaError(
        code, f"Failed to elect leader for partition {topic}-{partition} under strategy {strategy}"
    )
