"""Hypothesis strategies for rack trees and assignments."""

from __future__ import annotations

from hypothesis import strategies as st

from reassignd.model import Broker


@st.composite
def rack_trees(draw: st.DrawFn, *, symmetric: bool = False, max_brokers: int = 40) -> list[Broker]:
    """Brokers under `/dcN/rackM/hostK` paths, 1-3 levels deep (symmetric: one fan-out per level)."""
    depth = draw(st.integers(1, 3))
    fanouts = [draw(st.integers(1, 4)) for _ in range(depth)]
    per_leaf = draw(st.integers(1, 3))
    brokers: list[Broker] = []

    def walk(prefix: str, level: int) -> None:
        if len(brokers) >= max_brokers:
            return
        if level == depth:
            count = per_leaf if symmetric else draw(st.integers(1, 3))
            for _ in range(count):
                brokers.append(Broker(len(brokers), prefix or None))
            return
        width = fanouts[level] if symmetric else draw(st.integers(1, 4))
        for child in range(width):
            walk(f"{prefix}/l{level}n{child}", level + 1)

    walk("", 0)
    if symmetric and len(brokers) >= max_brokers:
        # a truncated tree is not symmetric any more: fall back to a flat one of the same size
        brokers = [Broker(i, f"/dc{i % 3}") for i in range(3 * (max_brokers // 3))]
    return brokers
