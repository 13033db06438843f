"""One partition's KIP-435 steps: from current replicas (CR) towards the final target replicas (FTR).

The rule, derived from the KIP's worked example where its prose disagrees (see docs/engine.md):

1. If FTR's preferred leader (FTR[0]) is not a replica yet, the step adds it alone, in front, and drops
   nothing; leadership moves to it once it is in sync.
2. Otherwise the step drops DR = the first R excess replicas (CR - FTR; out-of-sync ones first, then in
   current order) and adds NR = the next new replicas (FTR - CR, in FTR order): as many as bring the
   replica count back to |FTR|, at most R.
3. min.insync.replicas: when the in-sync replicas the step keeps plus the ones it adds would be fewer than
   min(min.insync.replicas, |FTR|), more new replicas are added (beyond R), then fewer are dropped.
4. The target lists the FTR replicas it holds in FTR order, then the excess replicas it still keeps in
   current order, so the last step equals FTR exactly and the preferred leader is always FTR[0] once in.

Kafka itself removes DR only after NR are in sync (KRaft PartitionReassignmentReplicas: the move completes
when the ISR minus the removing replicas contains the whole target), so a step never lowers the ISR
below what rule 3 checks.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Step:
    """One KIP-455 reassignment: send `target` as is to AlterPartitionReassignments."""

    current: tuple[int, ...]
    target: tuple[int, ...]
    final: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    leader_step: bool
    """The step brings in FTR's preferred leader on its own (rule 1)."""
    min_insync_extra: int
    """Replicas added beyond R by the min.insync.replicas rule."""
    insync_after: int
    """In-sync replicas when the step completes, counting kept in-sync replicas and the added ones."""

    @property
    def is_last(self) -> bool:
        return self.target == self.final

    @property
    def blocked(self) -> bool:
        """Nothing can be added or dropped without breaking min.insync.replicas: wait for the ISR."""
        return self.target == self.current

    def moves_leadership(self, leader: int) -> bool:
        """Whether the partition's leader changes because of this step (its preferred leader differs)."""
        return bool(self.target) and self.target[0] != leader


def next_step(
    current: tuple[int, ...],
    final: tuple[int, ...],
    isr: Collection[int],
    replica_count: int,
    min_insync: int,
) -> Step | None:
    """The next step from `current` to `final`, or None when `current` already equals `final`."""
    if current == final:
        return None
    if replica_count < 1:
        raise ValueError(f"replica_count must be at least 1, got {replica_count}")
    current_set = set(current)
    final_set = set(final)
    in_sync = set(isr) & current_set
    new = [b for b in final if b not in current_set]
    excess = [b for b in current if b not in final_set]
    excess.sort(key=lambda b: b in in_sync)  # stable: out-of-sync first, then current order

    if final[0] not in current_set:
        # The new preferred leader joins first, alone; a replica leaving that is out of sync (a stopped
        # broker being drained) leaves with it: Kafka completes a step only with its whole target in sync.
        dropped = [b for b in excess if b not in in_sync][:replica_count]
        added = [final[0]]
    else:
        dropped = excess[:replica_count]
        room = len(final) - (len(current) - len(dropped))
        added = new[: max(0, min(replica_count, room))]

    needed = min(min_insync, len(final))
    insync_after = len(in_sync) - sum(1 for b in dropped if b in in_sync) + len(added)
    while insync_after < needed and len(added) < len(new):
        added.append(next(b for b in new if b not in added))
        insync_after += 1
    while insync_after < needed and any(b in in_sync for b in dropped):
        keep = next(b for b in reversed(dropped) if b in in_sync)
        dropped.remove(keep)
        insync_after += 1

    holding = (current_set - set(dropped)) | set(added)
    target = tuple(b for b in final if b in holding) + tuple(b for b in current if b in holding - final_set)
    if target == current and set(current) == final_set:
        target = final  # same replicas, other order: the last step only reorders
    return Step(
        current=current,
        target=target,
        final=final,
        adding=tuple(added),
        removing=tuple(b for b in current if b in set(dropped)),
        leader_step=final[0] not in current_set,
        min_insync_extra=max(0, len(added) - replica_count),
        insync_after=insync_after,
    )


def all_steps(
    current: tuple[int, ...], final: tuple[int, ...], replica_count: int, min_insync: int = 1
) -> list[tuple[int, ...]]:
    """Every replica list the partition passes through, first `current`, last `final`.

    Assumes each step completes with all its replicas in sync (the `schedule` dry run and the tests).
    """
    lists = [current]
    while current != final:
        step = next_step(current, final, current, replica_count, min_insync)
        if step is None or step.blocked:
            raise AssertionError(f"no step from {current} to {final}")
        current = step.target
        lists.append(current)
    return lists
