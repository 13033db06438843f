"""The benchmark report: Markdown tables and PNG charts from bench/results/*.json.

`python -m bench.report` (and `python -m bench` after a full run) writes:
  bench/results/strategies.md        every figure, per scenario and strategy
  bench/results/README-table.md      the short table the README shows, with the machine and date
  bench/results/makespan-ratio.png   makespan / lower bound per scenario and strategy
  bench/results/movements-<scenario>.png  replicas being added per broker over time, per strategy
After a quick run nothing is written (quick results are not committed); the tables are printed instead.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
ORDER = ("stock", "kip435-batch", "reassignd", "reassignd-event-driven")
LABELS = {
    "stock": "stock tool",
    "kip435-batch": "KIP-435 batches",
    "reassignd": "reassignd",
    "reassignd-event-driven": "reassignd, event-driven",
}


def _load(name: str, quick: bool, directory: Path) -> dict[str, Any] | None:
    path = directory / f"{name}{'-quick' if quick else ''}.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _outcome(result: dict[str, Any]) -> str:
    """The ratio, or for a plan that could not finish (a broker lost for good) what it left."""
    if result.get("finished", True) or "partitions_unfinished" not in result:
        return _ratio(result["ratio_to_lower_bound"])
    others = result.get("unfinished_keeping_other_brokers", 0)
    kept = f"{others} do not keep it" if others else "all keep it"
    return f"{result['partitions_unfinished']} left, {kept}"


def _ratio(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.3f}x"


def strategies_table(doc: dict[str, Any]) -> str:
    figures = doc["figures"]
    lines = [
        "| scenario | strategy | makespan (s) | / lower bound | peak moves in / out per broker | "
        "extra replica-s | partition-s under min ISR | leader skew (max/mean) | admin requests | "
        "config writes |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for scenario, entry in figures["scenarios"].items():
        bound = entry["lower_bound"]
        for name in ORDER:
            r = entry["strategies"].get(name)
            if r is None:
                continue
            lines.append(
                f"| {scenario} | {LABELS[name]} | {r['makespan_seconds']:,.0f} | "
                f"{_ratio(r['ratio_to_lower_bound'])} | "
                f"{r['peak_incoming_per_broker']} / {r['peak_outgoing_per_broker']} | "
                f"{r['extra_replica_seconds']:,.0f} | {r['under_min_isr_partition_seconds']:,.0f} | "
                f"{r['leader_skew_at_end']['max_over_mean']:.2f} | {r['admin_requests']} | "
                f"{r['config_writes']} |"
            )
        lines.append(
            f"| {scenario} | *lower bound* | {bound['seconds']:,.0f} | 1.000x | "
            f"limit {entry['limits']['max_incoming_per_broker']} / "
            f"{entry['limits']['max_outgoing_per_broker']} | | | | | |"
        )
    return "\n".join(lines)


def bounds_table(doc: dict[str, Any]) -> str:
    lines = [
        "| scenario | partitions | enter (s) | leave (s) | chain (s) | bound | leave if leaders stay (s) |",
        "|---|--:|--:|--:|--:|---|--:|",
    ]
    for scenario, entry in doc["figures"]["scenarios"].items():
        b = entry["lower_bound"]
        lines.append(
            f"| {scenario} | {entry['partitions_moved']} | {b['enter']:,.0f} | {b['leave']:,.0f} | "
            f"{b['chain']:,.0f} | {b['bottleneck']} | {b.get('leave_current_leaders', 0):,.0f} |"
        )
    return "\n".join(lines)


def _daemon_row(label: str, f: dict[str, Any]) -> str:
    moving = (
        f"{f['moving_cycle_median_seconds']} / {f['moving_cycle_max_seconds']}"
        if "moving_cycle_median_seconds" in f
        else "-"
    )
    return (
        f"| {label} | {f['submit_seconds']} | {f['first_cycle_seconds']} | {f['cycle_median_seconds']} | "
        f"{f['cycle_cpu_median_seconds']} | {moving} | {f.get('peak_rss_mb', '-')} |"
    )


def readme_table(strategies: dict[str, Any], daemon: dict[str, Any] | None, others: dict[str, Any]) -> str:
    """Makespan / lower bound per scenario, then the control plane's cost."""
    figures = strategies["figures"]
    names = [n for n in ORDER if any(n in e["strategies"] for e in figures["scenarios"].values())]
    machine = strategies["machine"]
    lines = [
        f"Measured {machine['date']} on {machine.get('cpu', machine['machine'])} ({machine['machine']}), "
        f"{machine['cpus']} CPUs shared with other jobs, Python {machine['python']} (`make bench`; the "
        "makespan figures are virtual time: exact, and reproducible by seed).",
        "",
        "Makespan / lower bound (peak replicas added per broker, limit "
        f"{_first(figures)['limits']['max_incoming_per_broker']}):",
        "",
        "| scenario | " + " | ".join(LABELS[n] for n in names) + " |",
        "|---|" + "--:|" * len(names),
    ]
    for scenario, entry in figures["scenarios"].items():
        cells = []
        for n in names:
            r = entry["strategies"].get(n)
            cells.append("-" if r is None else f"{_outcome(r)} ({r['peak_incoming_per_broker']})")
        marker = " (broker fails)" if entry["has_failure"] else ""
        lines.append(f"| {scenario}{marker} | " + " | ".join(cells) + " |")
    if daemon is not None:
        lines += [
            "",
            f"Control plane over TCP, {daemon['figures']['cluster_partitions']:,}-partition simulated "
            "cluster (2 shared cores: noisy):",
            "",
            "| plan (partitions) | submit (s) | first cycle (s) | steady cycle wall, median (s) | "
            "cycle CPU, median (s) | moving cycle wall, median / max (s) | daemon peak RSS (MiB) |",
            "|--:|--:|--:|--:|--:|--:|--:|",
        ]
        rows = [(f"{int(size):,}", f) for size, f in daemon["figures"]["plans"].items()]
        million = daemon["figures"].get("million")
        if million is not None:
            rows.append((f"{million['plan_partitions']:,}, on {million['cluster_partitions']:,}", million))
        lines += [_daemon_row(label, f) for label, f in rows]
        lines += [
            "",
            "Steady: nothing changed since the last cycle; moving: the simulator's clock advanced 1 s "
            "between cycles, so 1,000 in-flight copies progress and steps complete and start.",
        ]
    engine, sim = others.get("engine"), others.get("sim")
    if engine is not None:
        e = engine["figures"]
        lines += [
            "",
            f"Engine decision ({e['partitions']:,}-partition plan, {e['in_flight']:,} in flight): "
            f"incremental {e['incremental_median_ms_by_changed'].get('1000', '-')} ms with 1,000 changed, "
            f"{e['incremental_median_ms_by_changed'].get('10', '-')} ms with 10; full reconcile "
            f"{e['full_decision_median_ms']} ms.",
        ]
    if sim is not None:
        s = sim["figures"]
        lines.append(
            f"Simulator tick ({s['partitions']:,} partitions, {s['moving_replicas']:,} moving): "
            f"{s['tick_ms_mean']} ms mean, {s['tick_ms_p99']} ms p99 per 1 s tick."
        )
    planner = others.get("planner")
    if planner is not None and "cluster_balance_s" in planner["figures"]:
        p = planner["figures"]
        lines.append(
            f"Balance planner ({p['partitions']:,} partitions on {p['brokers']:,} brokers): "
            f"{p['replicas_moved']:,} replicas moved for a lower bound of {p['lower_bound']:,}, "
            f"in {p['cluster_balance_s']} s."
        )
    return "\n".join(lines) + "\n"


def _first(figures: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = next(iter(figures["scenarios"].values()))
    return entry


def ratio_chart(doc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = list(doc["figures"]["scenarios"])
    names = [n for n in ORDER if any(n in e["strategies"] for e in doc["figures"]["scenarios"].values())]
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(11, 4.5))
    for i, name in enumerate(names):
        values = [
            doc["figures"]["scenarios"][s]["strategies"].get(name, {}).get("ratio_to_lower_bound") or 0
            for s in scenarios
        ]
        ax.bar([x + i * width for x in range(len(scenarios))], values, width, label=LABELS[name])
    for x, s in enumerate(scenarios):
        if not any(r.get("finished", True) for r in doc["figures"]["scenarios"][s]["strategies"].values()):
            center = x + width * (len(names) - 1) / 2
            ax.text(
                center, 0.95, "cannot finish:\na broker is lost", ha="center", fontsize=7, color="dimgray"
            )
    ax.axhline(1.0, color="black", linewidth=0.8)
    target = doc["figures"]["target_ratio"]
    ax.axhline(target, color="red", linestyle="--", linewidth=0.8, label=f"target {target:.2f}x")
    ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(scenarios))])
    ax.set_xticklabels(scenarios, rotation=15, fontsize=8)
    ax.set_ylabel("makespan / lower bound")
    ax.set_ylim(bottom=0.9)
    ax.legend(fontsize=8)
    ax.set_title("Makespan relative to the physical lower bound")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def movements_chart(scenario: str, entry: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timelines = entry["timelines"]
    names = [n for n in ORDER if n in timelines]
    fig, axes = plt.subplots(len(names), 1, figsize=(10, 2.4 * len(names)), sharex=True)
    if len(names) == 1:
        axes = [axes]
    limit = entry["limits"]["max_incoming_per_broker"]
    for ax, name in zip(axes, names, strict=True):
        points = timelines[name]["points"]
        brokers = sorted({b for _, moves in points for b in moves}, key=int)
        times = [t for t, _ in points] + [timelines[name]["horizon"]]
        for b in brokers:
            counts = [moves.get(b, 0) for _, moves in points] + [0]
            ax.step(times, counts, where="post", linewidth=0.8, label=f"broker {b}")
        ax.axhline(limit, color="red", linestyle="--", linewidth=0.8)
        ax.set_ylabel("replicas being\nadded", fontsize=8)
        ax.set_title(f"{LABELS[name]}", fontsize=9)
    axes[-1].set_xlabel("virtual seconds")
    if names:
        axes[0].legend(fontsize=6, ncol=6, loc="upper right")
    fig.suptitle(f"{scenario}: replicas being added per broker (red: per-broker limit)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(quick: bool = False, directory: Path = RESULTS) -> list[Path]:
    """Write the report from the results in `directory`; after a quick run, print it instead."""
    strategies = _load("strategies", quick, directory)
    if strategies is None:
        print("   no strategies results: run `python -m bench strategies` first")
        return []
    daemon = _load("daemon", quick, directory)
    others = {
        name: doc
        for name in ("engine", "sim", "planner")
        if (doc := _load(name, quick, directory)) is not None
    }
    table = readme_table(strategies, daemon, others)
    detail = (
        "# Execution efficiency: every figure\n\n"
        + strategies_table(strategies)
        + "\n\n## Lower bound per scenario\n\n"
        + bounds_table(strategies)
        + "\n"
    )
    if quick:
        print(table)
        return []
    written = [directory / "README-table.md", directory / "strategies.md", directory / "makespan-ratio.png"]
    written[0].write_text(table)
    written[1].write_text(detail)
    ratio_chart(strategies, written[2])
    for scenario, entry in strategies["figures"]["scenarios"].items():
        if entry.get("timelines"):
            path = directory / f"movements-{scenario}.png"
            movements_chart(scenario, entry, path)
            written.append(path)
    return written


if __name__ == "__main__":
    for out in write(quick="--quick" in sys.argv):
        print(f"   wrote {out}")
