"""The planner's report: figures as JSON and PNG charts (matplotlib, headless) per cluster.

Charts: replicas, preferred leaders and bytes (GB) per broker before and after (brokers sorted by id), with
the threshold band drawn and excluded / drained brokers shaded; and the rack spread: replicas per top-level
domain before and after, with the count of partitions whose spread is uneven. Legends sit outside the plot
area, titles name the cluster.
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
    return o.brokers


ROLE_SHADE = {
    "drained": "#f4c7c3",
    "excluded": "#d9d9d9",
    "offline": "#eeeeee",
    "not in --brokers": "#eeeeee",
}


def _band(figures: dict[str, Any], load: str) -> tuple[float, float] | None:
    band = figures.get("scores_after", {}).get(load, {}).get("band")
    return (float(band[0]), float(band[1])) if band else None


def _charts(o: ClusterPlan, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    written = []
    name = _safe(o.cluster)
    f = o.figures
    brokers = [int(b) for b in o.before["broker"]]
    roles = {int(r["broker"]): r.get("role", "member") for r in o.brokers}
    x = list(range(len(brokers)))
    few = len(brokers) <= 60
    fig, axes = plt.subplots(3, 1, figsize=(max(9, min(30, len(brokers) * 0.25 + 6)), 10), sharex=True)
    panels = (
        ("replicas", "replicas", 1.0, "replicas"),
        ("leaders", "leaders\n(after: preferred)", 1.0, "preferred_leaders"),
        ("bytes", "GB", 1e9, "bytes"),
    )
    for ax, (column, label, scale, load) in zip(axes, panels, strict=True):
        before = [v / scale for v in o.before[column].to_list()]
        after = [v / scale for v in o.after[column].to_list()]
        for i, b in enumerate(brokers):
            shade = ROLE_SHADE.get(roles.get(b, "member"))
            if shade:
                ax.axvspan(i - 0.5, i + 0.5, color=shade, zorder=0, linewidth=0)
        if few:
            ax.bar([i - 0.2 for i in x], before, 0.4, label="before", color="#9ecae1", zorder=2)
            ax.bar([i + 0.2 for i in x], after, 0.4, label="after", color="#3182bd", zorder=2)
        else:
            ax.plot(x, before, ".", markersize=3, label="before", color="#9ecae1", zorder=2)
            ax.plot(x, after, ".", markersize=3, label="after", color="#3182bd", zorder=2)
        band = _band(f, load)
        if band is not None:
            low, high = band[0] / scale, band[1] / scale
            ax.axhspan(low, high, color="#31a354", alpha=0.12, zorder=1, label="band (threshold)")
            ax.axhline(low, color="#31a354", linewidth=0.8, linestyle="--", zorder=3)
            ax.axhline(high, color="#31a354", linewidth=0.8, linestyle="--", zorder=3)
        ax.set_ylabel(label)
        ax.grid(axis="y", linewidth=0.3, zorder=0)
    handles, labels = axes[0].get_legend_handles_labels()
    shaded = sorted({roles.get(b, "member") for b in brokers} & set(ROLE_SHADE))
    handles += [Patch(color=ROLE_SHADE[r]) for r in shaded]
    labels += [f"{r} broker" for r in shaded]
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.93), frameon=False)
    if few:
        axes[-1].set_xticks(
            x, [str(b) for b in brokers], rotation=0 if len(brokers) <= 30 else 90, fontsize=7
        )
    axes[-1].set_xlabel("broker (sorted by id)")
    fig.suptitle(
        f"{o.cluster}: {f['goal']}{' (size-aware)' if f.get('size_aware') else ''}, "
        f"{f['replicas_moved']:,} replicas moved ({f['bytes_moved'] / 1e9:,.1f} GB), "
        f"{f['preferred_leader_changes']:,} preferred-leader changes"
    )
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    path = out / f"{name}-brokers.png"
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    written.append(path)

    domain_before: dict[str, int] = {}
    domain_after: dict[str, int] = {}
    for b, before_n, after_n in zip(
        o.before["broker"], o.before["replicas"], o.after["replicas"], strict=True
    ):
        d = o.domains.get(int(b), "?")
        domain_before[d] = domain_before.get(d, 0) + int(before_n)
        domain_after[d] = domain_after.get(d, 0) + int(after_n)
    names = sorted(domain_before)[:60]
    fig, ax = plt.subplots(figsize=(max(7, len(names) * 0.45 + 5), 4.5))
    pos = list(range(len(names)))
    ax.bar([p - 0.2 for p in pos], [domain_before[n] for n in names], 0.4, label="before", color="#9ecae1")
    ax.bar([p + 0.2 for p in pos], [domain_after[n] for n in names], 0.4, label="after", color="#3182bd")
    if len(names) <= 8:
        ax.set_xticks(pos, names, fontsize=8)
    else:
        ax.set_xticks(pos, names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("replicas")
    spread = f["spread_violations"]
    ax.set_title(
        f"{o.cluster}: replicas per top-level domain\n"
        f"partitions with an uneven rack spread {spread['before']:,} -> {spread['after']:,}"
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    path = out / f"{name}-rack-spread.png"
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    written.append(path)
    return written
