"""`reassignd status [--watch]` rendering: pure functions from the status JSON to rich renderables or text.

Rendering never talks to the daemon or the terminal, so it is tested from a status document alone; `watch`
is the only impure part (poll, draw, sleep) and takes its fetch and sleep functions as arguments.
The status document is the one GET /v1/status returns (docs/api.md; PlanStatus in the OpenAPI document);
fields a daemon does not send are shown as unknown rather than failing the view.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from reassignd.client import ApiUnreachable

Status = Mapping[str, Any]
LEADER_RATE = "leader.reassignment.throttled.rate"
FOLLOWER_RATE = "follower.reassignment.throttled.rate"
FINISHED = {"completed": 0, "cancelled": 1, "failed": 1}
_STATE_STYLE = {"running": "green", "paused": "yellow", "completed": "bold green", "cancelled": "magenta"}
_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


# ---------------------------------------------------------------------------------------------------------
# Units


def format_bytes(value: float | None) -> str:
    """Decimal units, as Kafka's configs and most dashboards count bytes: 1.5 GB = 1.5e9 bytes."""
    if value is None:
        return "?"
    size, unit = float(value), 0
    while abs(size) >= 1000 and unit < len(_UNITS) - 1:
        size, unit = size / 1000, unit + 1
    return f"{size:.0f} {_UNITS[unit]}" if unit == 0 else f"{size:.1f} {_UNITS[unit]}"


def format_rate(value: float | None) -> str:
    return "-" if value is None else f"{format_bytes(value)}/s"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _percent(done: float, total: float) -> str:
    return f"{100.0 * done / total:.1f}%" if total else "100.0%"


def _bytes_text(moved: Any, total: Any, percent: Any = None, grown: Any = None) -> str:
    """`moved / total (pct)`, or `unknown` before the daemon has measured the plan (queued). The total and
    the daemon's percentage are the work fixed at the start; what producers wrote since shows apart."""
    if total is None:
        return "unknown"
    shown = f"{float(percent):.1f}%" if percent is not None else _percent(moved or 0, total)
    extra = f" +{format_bytes(grown)} written since" if grown else ""
    return f"{format_bytes(moved or 0)}/{format_bytes(total)}{extra} ({shown})"


def cluster_text(status: Status) -> str | None:
    """The cluster's reachability in words, when there is something to say."""
    cluster = status.get("cluster") or {}
    offline = cluster.get("unreachable_brokers") or []
    if cluster.get("reachable", True):
        return f"cluster reachable; brokers offline: {', '.join(map(str, offline))}" if offline else None
    since = cluster.get("since")
    when = ""
    if isinstance(since, (int, float)):
        stamp = datetime.fromtimestamp(since, UTC)
        when = (
            f" since {stamp.strftime('%H:%M:%SZ')} ({format_duration(datetime.now(UTC).timestamp() - since)})"
        )
    return f"CLUSTER UNREACHABLE{when}: no broker answers; nothing new starts"


def outcome_text(status: Status) -> str | None:
    """Where an ended plan left its partitions, and what a cancel is still restoring."""
    p = _progress(status)
    outcome = p.get("outcome")
    if isinstance(outcome, Mapping):
        counts = outcome.get("counts") or {}
        return (
            f"ended: {counts.get('target', 0)} on target, {counts.get('pre_plan', 0)} back on their "
            f"pre-plan list, {counts.get('unchanged', 0)} never moved, "
            f"{counts.get('dropped', 0)} dropped (topic deleted)"
        )
    cancel = p.get("cancel")
    if isinstance(cancel, Mapping):
        return (
            f"cancelling: {cancel.get('remaining', 0)} of {cancel.get('partitions', 0)} partitions "
            f"still to settle ({cancel.get('to_pre_plan', 0)} back to their pre-plan list, "
            f"{cancel.get('to_target', 0)} finishing on their target)"
        )
    return None


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A plain, left-aligned text table: what scripts and logs want from human output."""
    cells = [[str(h) for h in headers], *[["-" if c is None else str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]


# ---------------------------------------------------------------------------------------------------------
# Pieces shared by the renderings


def _progress(status: Status) -> Mapping[str, Any]:
    return status.get("progress") or {}


def _moves(count: Any, limit: Any) -> str:
    return f"{count}/{limit}" if limit is not None else str(count)


def _tp(entry: Mapping[str, Any]) -> str:
    return f"{entry.get('topic')}-{entry.get('partition')}"


def _partitions_total(status: Status) -> Any:
    return _progress(status).get("partitions_total", status.get("partitions", 0)) or 0


def summary_line(status: Status) -> str:
    p = _progress(status)
    moved = _bytes_text(p.get("bytes_moved"), p.get("bytes_total"), p.get("percent"), p.get("bytes_grown"))
    return (
        f"plan {status.get('plan_id')} {status.get('state')}: "
        f"bytes {moved}, "
        f"partitions {p.get('partitions_done', 0)}/{_partitions_total(status)} done, "
        f"{p.get('partitions_in_flight', 0)} moving, {p.get('partitions_waiting', 0)} waiting, "
        f"rate {format_rate(p.get('rate_bytes_per_sec'))}, ETA {format_duration(p.get('eta_seconds'))}, "
        f"stalled {len(status.get('stalled') or [])}"
        + (f", dropped {p['partitions_dropped']}" if p.get("partitions_dropped") else "")
        + ("" if (status.get("cluster") or {}).get("reachable", True) else ", CLUSTER UNREACHABLE")
    )


def _stalled_text(entry: Mapping[str, Any]) -> str:
    catchup = format_rate(entry.get("catchup_bytes_per_sec"))
    produce = format_rate(entry.get("produce_bytes_per_sec"))
    return f"{_tp(entry)} -> broker {entry.get('broker')}: catch-up {catchup} <= produce {produce}"


def _broker_rows(status: Status) -> list[list[Any]]:
    rows = []
    for b in status.get("brokers") or []:
        rows.append(
            [
                b.get("broker"),
                _moves(b.get("moves_in", 0), b.get("limit_in")),
                _moves(b.get("moves_out", 0), b.get("limit_out")),
                format_rate(b.get("leader_throttle")),
                format_rate(b.get("follower_throttle")),
                "yes" if b.get("online", True) else "NO",
            ]
        )
    return rows


_BROKER_HEADERS = ("BROKER", "IN", "OUT", "LEADER THROTTLE", "FOLLOWER THROTTLE", "ONLINE")


def _throttle_text(status: Status) -> str:
    rates = status.get("throttles") or {}
    leader, follower = format_rate(rates.get(LEADER_RATE)), format_rate(rates.get(FOLLOWER_RATE))
    return f"throttle: leader {leader}, follower {follower}"


# ---------------------------------------------------------------------------------------------------------
# Plain text


def status_lines(status: Status, *, waiting_shown: int = 5) -> list[str]:
    """The whole status as plain lines: what `status` prints when stdout is not a terminal."""
    lines = [summary_line(status), _throttle_text(status)]
    lines += [text for text in (cluster_text(status), outcome_text(status)) if text]
    if status.get("brokers"):
        lines += ["", *format_table(_BROKER_HEADERS, _broker_rows(status))]
    stalled = status.get("stalled") or []
    if stalled:
        lines += ["", f"STALLED ({len(stalled)}): catch-up rate does not exceed produce rate"]
        lines += [f"  {_stalled_text(s)}" for s in stalled]
    waiting = status.get("waiting") or []
    if waiting:
        lines += ["", f"waiting ({len(waiting)}):"]
        lines += [f"  {_tp(w)}: {w.get('reason')}" for w in waiting[:waiting_shown]]
        if len(waiting) > waiting_shown:
            lines.append(f"  ... and {len(waiting) - waiting_shown} more")
    return lines


def watch_lines(status: Status, now: datetime) -> list[str]:
    """One timestamped line per interval (plus one per stalled move): a log-friendly watch."""
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [
        f"{stamp} {summary_line(status)}",
        *(f"{stamp}   STALLED {_stalled_text(s)}" for s in status.get("stalled") or []),
    ]


# ---------------------------------------------------------------------------------------------------------
# Rich


def render_status(status: Status, *, notice: str | None = None) -> RenderableType:
    """The live view: overall bars with ETA, per-broker movements against limits, throttles, stalls."""
    p = _progress(status)
    state = str(status.get("state"))
    header = Text.assemble(
        ("plan ", "bold"),
        (str(status.get("plan_id")), "bold cyan"),
        "  ",
        (state, _STATE_STYLE.get(state, "bold")),
    )
    if status.get("started_at"):
        header.append(f"  started {status['started_at']}", "dim")

    bytes_total, bytes_moved = p.get("bytes_total") or 0, p.get("bytes_moved") or 0
    parts_total = _partitions_total(status)
    parts_done = p.get("partitions_done", 0) or 0
    overall = Table.grid(padding=(0, 1))
    overall.add_row(
        "bytes",
        ProgressBar(total=max(bytes_total, 1), completed=bytes_moved if bytes_total else 1, width=40),
        _bytes_text(
            p.get("bytes_moved"), p.get("bytes_total"), p.get("percent"), p.get("bytes_grown")
        ).replace("/", " / ", 1),
    )
    overall.add_row(
        "partitions",
        ProgressBar(total=max(parts_total, 1), completed=parts_done if parts_total else 1, width=40),
        f"{parts_done} / {parts_total} done, {p.get('partitions_in_flight', 0)} moving, "
        f"{p.get('partitions_waiting', 0)} waiting",
    )
    overall.add_row(
        "rate",
        "",
        f"{format_rate(p.get('rate_bytes_per_sec'))}   ETA {format_duration(p.get('eta_seconds'))}",
    )

    brokers = Table(title="per-broker movements (in flight / limit)", title_justify="left", expand=False)
    for heading in _BROKER_HEADERS:
        brokers.add_column(heading, justify="right" if heading in ("BROKER", "IN", "OUT") else "left")
    for raw, row in zip(status.get("brokers") or [], _broker_rows(status), strict=True):
        at_limit = any(
            raw.get(limit) is not None and raw.get(count, 0) >= raw[limit]
            for count, limit in (("moves_in", "limit_in"), ("moves_out", "limit_out"))
        )
        style = "red" if not raw.get("online", True) else ("yellow" if at_limit else None)
        brokers.add_row(*(str(c) for c in row), style=style)

    parts: list[RenderableType] = [header]
    unreachable = cluster_text(status)
    if unreachable:
        parts.append(Text(unreachable, "bold red" if "UNREACHABLE" in unreachable else "yellow"))
    ended = outcome_text(status)
    if ended:
        parts.append(Text(ended, "bold"))
    parts += [overall, Text(_throttle_text(status)), brokers]
    stalled = status.get("stalled") or []
    if stalled:
        table = Table(title=f"STALLED moves ({len(stalled)})", title_style="bold red", style="red")
        for heading in ("PARTITION", "TO BROKER", "CATCH-UP", "PRODUCE"):
            table.add_column(heading, style="bold red")
        for s in stalled:
            table.add_row(
                _tp(s),
                str(s.get("broker")),
                format_rate(s.get("catchup_bytes_per_sec")),
                format_rate(s.get("produce_bytes_per_sec")),
            )
        parts.append(table)
    waiting = status.get("waiting") or []
    if waiting:
        reasons: dict[str, int] = {}
        for w in waiting:
            reasons[str(w.get("reason"))] = reasons.get(str(w.get("reason")), 0) + 1
        parts.append(Text("waiting: " + "; ".join(f"{n} x {r}" for r, n in sorted(reasons.items())), "dim"))
    if notice:
        parts.append(Text(notice, "bold yellow"))
    return Group(*parts)


# ---------------------------------------------------------------------------------------------------------
# The loop


def watch(
    fetch: Callable[[], Status],
    *,
    interval: float,
    out: TextIO,
    as_json: bool = False,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    console: Console | None = None,
) -> int:
    """Poll and draw until the plan finishes: 0 when it completed, 1 when cancelled or failed.

    The first fetch's failure propagates (the caller reports it); later ones are shown and retried, so a
    restarting daemon does not end the view.
    """
    status = fetch()
    tty = out.isatty() and not as_json
    if not tty:
        return _watch_plain(fetch, status, interval=interval, out=out, as_json=as_json, sleep=sleep, now=now)
    console = console or Console(file=out)
    with Live(render_status(status), console=console, refresh_per_second=4, transient=False) as live:
        while str(status.get("state")) not in FINISHED:
            sleep(interval)
            try:
                status = fetch()
                live.update(render_status(status), refresh=True)
            except ApiUnreachable as exc:
                live.update(render_status(status, notice=f"{now():%H:%M:%S} {exc}; retrying"), refresh=True)
    return FINISHED[str(status["state"])]


def _watch_plain(
    fetch: Callable[[], Status],
    status: Status,
    *,
    interval: float,
    out: TextIO,
    as_json: bool,
    sleep: Callable[[float], None],
    now: Callable[[], datetime],
) -> int:
    while True:
        if as_json:
            out.write(json.dumps(status, separators=(",", ":")) + "\n")
        else:
            out.write("\n".join(watch_lines(status, now())) + "\n")
        out.flush()
        if str(status.get("state")) in FINISHED:
            return FINISHED[str(status["state"])]
        sleep(interval)
        while True:
            try:
                status = fetch()
                break
            except ApiUnreachable as exc:
                out.write(f"{now().astimezone(UTC):%Y-%m-%dT%H:%M:%SZ} unreachable: {exc}; retrying\n")
                out.flush()
                sleep(interval)
