"""A rehearsal's figures for people: a text summary and a PNG chart (matplotlib, headless).

Both say the time is the simulated cluster's, give bytes and rates in one format (decimal units, one
decimal: `rate_text`), and name what holds back a move that never converges: the resource the simulator's
allocation found saturated (a throttle, or a broker's network link, with the part of it producers' traffic
takes), grouped so that moves held by the same bottleneck are listed under it once.

The chart: bytes remaining over time from 0 (with the stretch where nothing progresses shaded and the stuck
moves listed), then the replicas moving into and out of each broker over time, each against its limit,
only for brokers that receive (resp. send) something.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from reassignd.rehearsal.result import RehearsalResult, Sample, Stuck, byte_text, rate_text

LISTED_STUCK = 20
CHART_STUCK = 5


def _duration(seconds: float) -> str:
    total = round(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _limit(value: int | None) -> str:
    return "unlimited" if value is None or value >= 2**31 - 1 else str(value)


def _stuck_line(stuck: Stuck) -> str:
    return (
        f"{stuck.tp} -> broker {stuck.broker}: fetch {rate_text(stuck.fetch_bytes_per_sec)}, "
        f"produce {rate_text(stuck.produce_bytes_per_sec)}"
    )


def stuck_by_bottleneck(stuck: list[Stuck]) -> list[tuple[str, list[Stuck]]]:
    """The stuck moves grouped by what holds them back, the group holding most first."""
    groups: dict[str, list[Stuck]] = {}
    for move in stuck:
        groups.setdefault(move.reason, []).append(move)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def text_report(result: RehearsalResult, width: int = 80) -> list[str]:
    verdict = (
        f"predicted duration: {_duration(result.duration_seconds)} of cluster time "
        f"({result.duration_seconds:,.0f} s)"
        if result.finished
        else f"does NOT finish: {result.ended_because} (after {_duration(result.duration_seconds)} "
        "of cluster time)"
    )
    lines = textwrap.wrap(verdict, width, subsequent_indent="  ")
    plan = (
        f"plan: {result.partitions} partitions, {result.steps} steps, {byte_text(result.total_bytes)} "
        f"to copy; {result.cycles} daemon cycles of {result.cycle_interval:g} s"
    )
    limits = (
        f"peak: most moves at once (limits: {_limit(result.max_incoming_per_broker)} in, "
        f"{_limit(result.max_outgoing_per_broker)} out per broker)"
    )
    lines += [*textwrap.wrap(plan, width, subsequent_indent="  "), "", limits]
    lines.append(f"{'broker':>6}  {'bytes in':>10}  {'bytes out':>10}  {'peak in':>7}  {'peak out':>8}")
    brokers = sorted(set(result.bytes_in) | set(result.bytes_out) | set(result.peak_incoming))
    for b in brokers:
        received, sent = byte_text(result.bytes_in.get(b, 0)), byte_text(result.bytes_out.get(b, 0))
        peaks = f"{result.peak_incoming.get(b, 0):>7}  {result.peak_outgoing.get(b, 0):>8}"
        lines.append(f"{b:>6}  {received:>10}  {sent:>10}  {peaks}")
    lines.append("")
    if result.under_min_isr:
        lines.append(
            f"under min.insync.replicas: {len(result.under_min_isr)} partition(s), "
            f"{_duration(result.under_min_isr_seconds)} in total"
        )
        for entry in result.under_min_isr[:10]:
            lines.append(f"  {entry['topic']}-{entry['partition']}: {_duration(entry['seconds'])}")
        if len(result.under_min_isr) > 10:
            lines.append(f"  and {len(result.under_min_isr) - 10} more")
    else:
        lines.append("under min.insync.replicas: never")
    if result.never_converging:
        lines.append(
            f"moves that never converge (their fetch rate does not exceed the produce rate): "
            f"{len(result.never_converging)}"
        )
        listed = 0
        for reason, moves in stuck_by_bottleneck(result.never_converging):
            lines += textwrap.wrap(f"{reason}:", width, initial_indent="  ", subsequent_indent="    ")
            for move in moves:
                if listed < LISTED_STUCK:
                    lines.append(f"    {_stuck_line(move)}")
                listed += 1
        if listed > LISTED_STUCK:
            lines.append(f"  and {listed - LISTED_STUCK} more moves")
    else:
        lines.append("moves that never converge: none")
    lines.append(f"(rehearsed in {result.wall_seconds:.2f} s of wall time)")
    return lines


# ---------------------------------------------------------------------------------------------------------
# Chart


def _time_scale(end: float) -> tuple[float, str]:
    if end > 2 * 86400:
        return 86400.0, "days"
    if end > 7200:
        return 3600.0, "h"
    if end > 300:
        return 60.0, "min"
    return 1.0, "s"


def _byte_scale(largest: float) -> tuple[float, str]:
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if largest >= scale:
            return scale, unit
    return 1.0, "bytes"


def _stalled_since(timeline: list[Sample]) -> float | None:
    """When the bytes remaining last fell: nothing progressed from then to the end."""
    if len(timeline) < 2:
        return None
    last = timeline[-1].remaining_bytes
    since = timeline[0].time
    for before, after in itertools.pairwise(timeline):
        if after.remaining_bytes < before.remaining_bytes:
            since = after.time
    return since if last > 0 else None


def write_chart(result: RehearsalResult, path: str | Path) -> Path:
    """The chart as a PNG at `path`."""
    import matplotlib.pyplot as plt

    figure = chart_figure(result)
    out = Path(path)
    try:
        figure.savefig(out, dpi=100)
    finally:
        plt.close(figure)
    return out


def chart_figure(result: RehearsalResult) -> Any:
    """Bytes remaining over time, then replicas moving into and out of each broker against the limits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timeline = result.timeline
    end = max(result.duration_seconds, timeline[-1].time if timeline else 0.0, 1e-9)
    scale, unit = _time_scale(end)
    receivers = sorted({b for s in timeline for b, n in s.incoming.items() if n})
    senders = sorted({b for s in timeline for b, n in s.outgoing.items() if n})
    rows = max(1, len(receivers)) + max(1, len(senders))
    figure, (top, middle, bottom) = plt.subplots(
        3,
        1,
        figsize=(11, 5 + 0.22 * rows),
        sharex=True,
        constrained_layout=True,
        gridspec_kw={"height_ratios": [3.2, max(1.2, 0.3 * len(receivers)), max(1.2, 0.3 * len(senders))]},
    )
    _remaining(top, result, scale, unit)
    stuck_on = {m.broker for m in result.never_converging}
    _moves(
        figure,
        middle,
        result,
        brokers=receivers,
        count=lambda s: s.incoming,
        limit=result.max_incoming_per_broker,
        what="moves into each broker (the new replicas it receives), against the per-broker limit",
        stuck_on=stuck_on,
        scale=scale,
    )
    _moves(
        figure,
        bottom,
        result,
        brokers=senders,
        count=lambda s: s.outgoing,
        limit=result.max_outgoing_per_broker,
        what="moves out of each broker (the leader the new replicas copy from), against the limit",
        stuck_on={
            m.bottleneck.broker
            for m in result.never_converging
            if m.bottleneck is not None and m.bottleneck.resource in ("network_out", "leader_throttle")
        },
        scale=scale,
    )
    bottom.set_xlabel(f"simulated cluster time ({unit})")
    bottom.set_xlim(0, end / scale)
    return figure


def _remaining(ax: Any, result: RehearsalResult, scale: float, unit: str) -> None:
    timeline = result.timeline
    largest = max([s.remaining_bytes for s in timeline] + [result.total_bytes, 1])
    bscale, bunit = _byte_scale(largest)
    x = [s.time / scale for s in timeline]
    # straight lines between samples: between simulator events every copy runs at a constant rate
    ax.plot(x, [s.remaining_bytes / bscale for s in timeline], color="tab:blue", label="bytes remaining")
    ax.set_ylim(0, largest / bscale * 1.08)
    ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    ax.set_ylabel(f"bytes remaining ({bunit})")
    ax.grid(alpha=0.3)
    size = f"{result.partitions} partitions, {byte_text(result.total_bytes)} to copy"
    if result.finished:
        title = f"Rehearsal: {size}; finishes after {_duration(result.duration_seconds)}"
    else:
        title = f"Rehearsal: {size}; does NOT finish"
    ax.set_title(f"{title}\n(simulated cluster time; producers keep writing meanwhile)", fontsize=11)
    if result.finished:
        return
    since = _stalled_since(timeline)
    end = result.duration_seconds
    if since is not None:
        ax.axvspan(since / scale, end / scale, color="tab:red", alpha=0.12, lw=0)
    stuck = result.never_converging
    notes = [f"stopped after {_duration(end)}: {result.ended_because}"]
    if stuck:
        notes.append(f"{len(stuck)} moves never converge:")
        for reason, moves in stuck_by_bottleneck(stuck)[:2]:
            notes += textwrap.wrap(reason, 100, subsequent_indent="  ")
            notes += [f"  {_stuck_line(m)}" for m in moves[:CHART_STUCK]]
            if len(moves) > CHART_STUCK:
                notes.append(f"  and {len(moves) - CHART_STUCK} more")
    ax.text(
        0.01,
        0.04,
        "\n".join(textwrap.shorten(n, 120, placeholder=" ...") for n in notes),
        transform=ax.transAxes,
        fontsize=8,
        family="monospace",
        va="bottom",
        color="darkred",
        bbox={"facecolor": "white", "edgecolor": "tab:red", "alpha": 0.9},
    )


def _moves(
    figure: Any,
    ax: Any,
    result: RehearsalResult,
    *,
    brokers: list[int],
    count: Callable[[Sample], Mapping[int, int]],
    limit: int | None,
    what: str,
    stuck_on: set[int],
    scale: float,
) -> None:
    from matplotlib import colors

    ax.set_title(what, loc="left", fontsize=9)
    ax.set_ylabel("broker", fontsize=9)
    if not brokers:
        ax.set_yticks([])
        ax.text(0.5, 0.5, "none", transform=ax.transAxes, ha="center", va="center", color="grey")
        return
    grid, end = _resample(result, brokers, count, bins=400)
    observed = max((v for row in grid for v in row), default=0)
    shown_limit = limit if limit is not None and limit < 2**31 - 1 else None
    top = max(observed, shown_limit or 0, 1)
    palette = matplotlib_colors(top, shown_limit)
    norm = colors.BoundaryNorm([v - 0.5 for v in range(top + 2)], palette.N)
    image = ax.imshow(
        grid,
        aspect="auto",
        interpolation="nearest",
        origin="lower",
        cmap=palette,
        norm=norm,
        extent=(0, end / scale, -0.5, len(brokers) - 0.5),
    )
    labels = [f"{b} stuck" if b in stuck_on and result.never_converging else str(b) for b in brokers]
    step = max(1, len(brokers) // 30)
    ax.set_yticks(range(0, len(brokers), step), labels[::step], fontsize=8)
    for tick, broker in zip(ax.get_yticklabels(), brokers[::step], strict=False):
        if broker in stuck_on and result.never_converging:
            tick.set_color("tab:red")
    roomy = len(brokers) >= top  # a row of height per tick at least
    ticks = list(range(top + 1)) if roomy else sorted({0, 1, observed, shown_limit or top, top})
    bar = figure.colorbar(image, ax=ax, ticks=ticks, pad=0.01, fraction=0.04)
    bar.ax.set_yticklabels([f"{t} = limit" if t == shown_limit else str(t) for t in ticks], fontsize=8)
    bar.set_label("moves", fontsize=8)
    if shown_limit is not None:
        bar.ax.axhline(shown_limit + 0.5, color="black", lw=1.5)


def matplotlib_colors(top: int, limit: int | None) -> Any:
    """0 light grey, 1..limit in growing blues, above the limit red: a broker at its limit is the darkest
    blue, one over it stands out."""
    from matplotlib import colormaps, colors

    blues = colormaps["Blues"]
    steps = []
    for value in range(top + 1):
        if value == 0:
            steps.append("#f7f7f7")
        elif limit is not None and value > limit:
            steps.append("#d62728")
        else:
            ceiling = limit if limit is not None else top
            steps.append(colors.to_hex(blues(0.35 + 0.6 * value / max(1, ceiling))))
    return colors.ListedColormap(steps)


def _resample(
    result: RehearsalResult, brokers: list[int], count: Callable[[Sample], Mapping[int, int]], bins: int
) -> tuple[list[list[int]], float]:
    """Moves per broker on a regular time grid (each sample holds until the next)."""
    timeline = result.timeline
    end = max(result.duration_seconds, timeline[-1].time if timeline else 0.0, 1e-9)
    grid = [[0] * bins for _ in brokers]
    index = 0
    for column in range(bins):
        t = (column + 0.5) * end / bins
        while index + 1 < len(timeline) and timeline[index + 1].time <= t:
            index += 1
        if not timeline:
            break
        values = count(timeline[index])
        for row, b in enumerate(brokers):
            grid[row][column] = values.get(b, 0)
    return grid, end
