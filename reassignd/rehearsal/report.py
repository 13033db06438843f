"""A rehearsal's figures for people: a text summary and a PNG timeline (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path

from reassignd.rehearsal.result import RehearsalResult

_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def _bytes(value: float) -> str:
    size, unit = float(value), 0
    while abs(size) >= 1000 and unit < len(_UNITS) - 1:
        size, unit = size / 1000, unit + 1
    return f"{size:.0f} {_UNITS[unit]}" if unit == 0 else f"{size:.1f} {_UNITS[unit]}"


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


def text_report(result: RehearsalResult) -> list[str]:
    verdict = (
        f"predicted duration: {_duration(result.duration_seconds)} ({result.duration_seconds:,.0f} s)"
        if result.finished
        else f"does NOT finish: {result.ended_because} (after {_duration(result.duration_seconds)})"
    )
    lines = [
        verdict,
        f"plan: {result.partitions} partitions, {result.steps} steps, {_bytes(result.total_bytes)} to copy; "
        f"{result.cycles} daemon cycles of {result.cycle_interval:g} s",
        "",
        f"{'broker':>6}  {'bytes in':>10}  {'bytes out':>10}  {'peak in':>7}  {'peak out':>8}",
    ]
    brokers = sorted(set(result.bytes_in) | set(result.bytes_out) | set(result.peak_incoming))
    for b in brokers:
        lines.append(
            f"{b:>6}  {_bytes(result.bytes_in.get(b, 0)):>10}  {_bytes(result.bytes_out.get(b, 0)):>10}  "
            f"{result.peak_incoming.get(b, 0):>7}  {result.peak_outgoing.get(b, 0):>8}"
        )
    lines.append("")
    if result.under_min_isr:
        lines.append(
            f"under min.insync.replicas: {len(result.under_min_isr)} partition(s), "
            f"{result.under_min_isr_seconds:,.0f} s in total"
        )
        for entry in result.under_min_isr[:10]:
            lines.append(f"  {entry['topic']}-{entry['partition']}: {entry['seconds']:,.0f} s")
    else:
        lines.append("under min.insync.replicas: never")
    if result.never_converging:
        lines.append(
            f"moves that never converge (fetch rate <= produce rate): {len(result.never_converging)}"
        )
        for stuck in result.never_converging[:20]:
            lines.append(
                f"  {stuck.tp} -> broker {stuck.broker}: produce {_bytes(stuck.produce_bytes_per_sec)}/s; "
                f"{stuck.reason}"
            )
    else:
        lines.append("moves that never converge: none")
    lines.append(f"(rehearsed in {result.wall_seconds:.2f} s)")
    return lines


def write_chart(result: RehearsalResult, path: str | Path) -> Path:
    """Bytes remaining over time, and replicas being added per broker (incoming) over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times = [s.time for s in result.timeline]
    scale, unit = 1.0, "s"
    if times and times[-1] > 7200:
        scale, unit = 3600.0, "h"
    elif times and times[-1] > 300:
        scale, unit = 60.0, "min"
    x = [t / scale for t in times]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True, constrained_layout=True)
    # straight lines between samples: between simulator events every copy runs at a constant rate
    top.plot(x, [s.remaining_bytes / 1e9 for s in result.timeline], color="tab:blue")
    top.set_ylabel("bytes remaining (GB)")
    title = "predicted" if result.finished else "does not finish"
    top.set_title(f"Rehearsal: {result.partitions} partitions, {title} {_duration(result.duration_seconds)}")
    top.grid(alpha=0.3)
    brokers = sorted({b for s in result.timeline for b in (*s.incoming, *s.outgoing)})
    grid, end = _resample(result, brokers, bins=400)
    if brokers:
        image = bottom.imshow(
            grid,
            aspect="auto",
            interpolation="nearest",
            origin="lower",
            cmap="viridis",
            extent=(0, end / scale, -0.5, len(brokers) - 0.5),
        )
        bottom.set_yticks(range(len(brokers)), [str(b) for b in brokers])
        figure.colorbar(image, ax=bottom, label="replicas being added")
    bottom.set_ylabel("broker (incoming movements)")
    bottom.set_xlabel(f"time ({unit})")
    out = Path(path)
    figure.savefig(out, dpi=100)
    plt.close(figure)
    return out


def _resample(result: RehearsalResult, brokers: list[int], bins: int) -> tuple[list[list[int]], float]:
    """Incoming movements per broker on a regular time grid (each sample holds until the next)."""
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
        for row, b in enumerate(brokers):
            grid[row][column] = timeline[index].incoming.get(b, 0)
    return grid, end
