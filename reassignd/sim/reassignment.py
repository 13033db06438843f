"""Pure partition-change rules of the KRaft controller, ported without ELR.

Sources (apache/kafka, metadata/src/main/java/org/apache/kafka/controller/):
- PartitionReassignmentReplicas.java: adding = T - C and removing = C - T (both ascending, TreeSet),
  replicas = T followed by removing; completion when ISR without removing contains every remaining replica.
- PartitionReassignmentRevert.java: cancel keeps replicas without adding, ISR without adding (unclean if
  that empties it).
- PartitionChangeBuilder.java `build()`: complete the reassignment if possible, then elect: keep the current
  leader if it is in the target ISR and alive, else the first target replica in the ISR and alive; PREFERRED
  tries the first replica first; UNCLEAN falls back to any alive replica and sets ISR = [leader]. Bump the
  leader epoch on a leader change or when the replica list loses a broker (not on an ISR shrink since
  metadata version 3.6, KAFKA-15021); never write an empty ISR (ELR disabled); every non-empty change is one
  PartitionChangeRecord, i.e. one partition-epoch bump.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

NO_LEADER = -1


class Election(Enum):
    ONLINE = 0
    PREFERRED = 1
    UNCLEAN = 2


@dataclass(frozen=True, slots=True)
class PartitionFields:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """The state after a PartitionChangeRecord and whether the record bumps the leader epoch."""

    after: PartitionFields
    leader_epoch_bump: bool
    unclean: bool = False
    # A ZooKeeper-mode change is several controller writes: how many leader- and partition-epoch bumps.
    leader_epoch_bumps: int | None = None  # None: one if leader_epoch_bump (a KRaft record)
    partition_epoch_bumps: int = 1


def reassignment_replicas(
    current: Sequence[int], target: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(replicas, adding, removing) for moving `current` to `target` (PartitionReassignmentReplicas)."""
    target_set, current_set = set(target), set(current)
    removing = tuple(sorted(current_set - target_set))
    adding = tuple(sorted(target_set - current_set))
    return (*target, *removing), adding, removing


def original_replicas(replicas: Sequence[int], adding: Sequence[int]) -> tuple[int, ...]:
    adding_set = set(adding)
    return tuple(r for r in replicas if r not in adding_set)


def revert(fields: PartitionFields) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """(replicas, isr, unclean) after cancelling (PartitionReassignmentRevert)."""
    replicas = original_replicas(fields.replicas, fields.adding)
    adding = set(fields.adding)
    isr = tuple(r for r in fields.isr if r not in adding)
    if not isr:
        return replicas, (replicas[0],), True
    return replicas, isr, False


def build_change(
    current: PartitionFields,
    is_alive: Callable[[int], bool],
    *,
    isr: Sequence[int] | None = None,
    replicas: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    election: Election = Election.ONLINE,
) -> PartitionChange | None:
    """Apply PartitionChangeBuilder.build() to `current`; None when the record would be a no-op."""
    t_isr = tuple(isr) if isr is not None else current.isr
    t_replicas = tuple(replicas) if replicas is not None else current.replicas
    t_adding = tuple(adding) if adding is not None else current.adding
    t_removing = tuple(removing) if removing is not None else current.removing

    # completeReassignmentIfNeeded
    if t_adding or t_removing:
        removing_set = set(t_removing)
        new_isr = tuple(r for r in t_isr if r not in removing_set)
        new_replicas = tuple(r for r in t_replicas if r not in removing_set)
        if new_isr and new_replicas and set(new_replicas) <= set(new_isr):
            t_isr, t_replicas, t_adding, t_removing = new_isr, new_replicas, (), ()

    # tryElection
    def valid(replica: int) -> bool:
        return replica in t_isr and is_alive(replica)

    new_leader: int = NO_LEADER
    unclean = False
    if election is Election.PREFERRED and t_replicas and valid(t_replicas[0]):
        new_leader = t_replicas[0]
    elif valid(current.leader):
        new_leader = current.leader
    else:
        new_leader = next((r for r in t_replicas if valid(r)), NO_LEADER)
        if new_leader == NO_LEADER and election is Election.UNCLEAN:
            new_leader = next((r for r in t_replicas if is_alive(r)), NO_LEADER)
            unclean = new_leader != NO_LEADER
    leader_set = new_leader != current.leader
    final_isr = current.isr
    if unclean:
        final_isr = (new_leader,)
    elif t_isr and t_isr != current.isr:
        final_isr = t_isr
    # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded: the replica list lost a broker.
    if not leader_set and not set(current.replicas) <= set(t_replicas):
        leader_set = True
    after = PartitionFields(
        replicas=t_replicas or current.replicas,
        isr=final_isr,
        leader=new_leader if new_leader != current.leader else current.leader,
        adding=t_adding,
        removing=t_removing,
    )
    if after == current and not leader_set:
        return None
    return PartitionChange(after=after, leader_epoch_bump=leader_set, unclean=unclean)
