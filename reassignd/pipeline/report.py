"""The planner's report: figures as JSON and PNG charts (matplotlib, headless) per cluster.

Charts: replicas, preferred leaders and bytes per broker before and after (brokers sorted by id), and the
rack spread: replicas per top-level domain before and after, with the count of partitions whose spread
is uneven.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from reassignd.pipeline.planner import ClusterPlan


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "cluster"


def write_report(outcomes: list[ClusterPlan], directory: str, *, charts: bool = True) -> list[Path]:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    summary = {
        "clusters": [o.figures for o in outcomes],
        "brokers": {o.cluster: _per_broker(o) for o in outcomes},
    }
    path = out / "report.json"
    path.write_text(json.dumps(summary, indent=2, default=_jsonable))
    written.append(path)
    if charts:
        for o in outcomes:
            written.extend(_charts(o, out))
    return written


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {value!r}")


def _per_broker(o: ClusterPlan) -> list[dict[str, Any]]:
    after = {int(r.broker): r for r in o.after.itertuples()}
    rows = []
    for r in o.before.itertuples():
        a = after[int(r.broker)]
        rows.append(
            {
                "broker": int(r.broker),
                "domain": o.domains.get(int(r.broker)),
                "replicas": [int(r.replicas), int(a.replicas)],
                "leaders": [int(r.leaders), int(a.leaders)],
                "preferred_leaders": [int(r.preferred_leaders), int(a.preferred_leaders)],
                "bytes": [int(r.bytes), int(a.bytes)],
            }
        )
    return rows


def _charts(o: ClusterPlan, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    name = _safe(o.cluster)
    brokers = [int(b) for b in o.before["broker"]]
    x = list(range(len(brokers)))
    fig, axes = plt.subplots(3, 1, figsize=(max(8, min(30, len(brokers) * 0.05 + 8)), 10), sharex=True)
    for ax, column, label in zip(
        axes,
        ("replicas", "leaders", "bytes"),
        ("replicas", "leaders (after: preferred)", "bytes"),
        strict=True,
    ):
        width = 0.4 if len(brokers) <= 60 else 1.0
        if len(brokers) <= 60:
            ax.bar([i - 0.2 for i in x], o.before[column], width, label="before")
            ax.bar([i + 0.2 for i in x], o.after[column], width, label="after")
        else:
            ax.plot(x, o.before[column].to_list(), ".", markersize=2, label="before")
            ax.plot(x, o.after[column].to_list(), ".", markersize=2, label="after")
        ax.set_ylabel(label)
        ax.legend(loc="upper right")
    if len(brokers) <= 60:
        axes[-1].set_xticks(x, [str(b) for b in brokers], rotation=90, fontsize=7)
    axes[-1].set_xlabel("broker (sorted by id)")
    fig.suptitle(f"{o.cluster}: {o.figures['goal']}, {o.figures['replicas_moved']} replicas moved")
    fig.tight_layout()
    path = out / f"{name}-brokers.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    written.append(path)

    domain_before: dict[str, int] = {}
    domain_after: dict[str, int] = {}
    for b, before, after in zip(o.before["broker"], o.before["replicas"], o.after["replicas"], strict=True):
        d = o.domains.get(int(b), "?")
        domain_before[d] = domain_before.get(d, 0) + int(before)
        domain_after[d] = domain_after.get(d, 0) + int(after)
    names = sorted(domain_before)[:60]
    fig, ax = plt.subplots(figsize=(max(6, len(names) * 0.4 + 4), 4))
    pos = list(range(len(names)))
    ax.bar([p - 0.2 for p in pos], [domain_before[n] for n in names], 0.4, label="before")
    ax.bar([p + 0.2 for p in pos], [domain_after[n] for n in names], 0.4, label="after")
    ax.set_xticks(pos, names, rotation=45, fontsize=8)
    spread = o.figures["spread_violations"]
    ax.set_title(
        "replicas per top-level domain; partitions with uneven spread "
        f"{spread['before']} -> {spread['after']}"
    )
    ax.legend()
    fig.tight_layout()
    path = out / f"{name}-rack-spread.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    written.append(path)
    return written
