"""What a plan did per broker, for the figures kept once it ended (`outcome` in run.py's summary).

A finished plan's view shows, per broker, the replicas it gained and lost (the pre-plan lists against the
lists it ended with) with the bytes it received (each partition's size when the plan started), and the
highest throttle rates reassignd applied there while the plan ran. The peaks are carried from one saved
summary to the next, so they survive the end of the plan, when the rates themselves are restored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reassignd.model import TopicPartition

Replicas = tuple[int, ...]


def broker_moves(
    baseline: Mapping[TopicPartition, Replicas],
    final: Mapping[TopicPartition, Replicas],
    sizes: Mapping[TopicPartition, int],
) -> list[dict[str, Any]]:
    """Per broker that gained or lost a replica: `replicas_in`, `replicas_out`, `bytes_in`."""
    brokers: dict[int, dict[str, int]] = {}
    for tp, before in baseline.items():
        after = final.get(tp)
        if after is None:
            continue
        for broker in set(after) - set(before):
            row = brokers.setdefault(broker, {"replicas_in": 0, "replicas_out": 0, "bytes_in": 0})
            row["replicas_in"] += 1
            row["bytes_in"] += sizes.get(tp, 0)
        for broker in set(before) - set(after):
            row = brokers.setdefault(broker, {"replicas_in": 0, "replicas_out": 0, "bytes_in": 0})
            row["replicas_out"] += 1
    return [{"broker": b, **brokers[b]} for b in sorted(brokers)]


def throttle_peaks(
    saved: Mapping[str, Any] | None, incoming: Mapping[int, float], outgoing: Mapping[int, float]
) -> dict[str, dict[str, float]]:
    """The highest `leader` and `follower` rates applied per broker so far (keys are broker ids as text,
    as JSON keeps them): the saved peaks, raised by the rates in force now."""
    peaks: dict[str, dict[str, float]] = {
        str(b): dict(rates) for b, rates in ((saved or {}).get("throttles_peak") or {}).items()
    }
    for kind, rates in (("follower", incoming), ("leader", outgoing)):
        for broker, rate in rates.items():
            entry = peaks.setdefault(str(broker), {})
            entry[kind] = max(float(rate), float(entry.get(kind, 0.0)))
    return dict(sorted(peaks.items(), key=lambda kv: int(kv[0])))
