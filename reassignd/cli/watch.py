"""`reassignd status [--watch]` rendering: pure functions from the status JSON to lines of text.

Rendering never talks to the daemon or the terminal, so it is tested from a status document alone; `watch`
is the only impure part (poll, draw, sleep) and takes its fetch and sleep functions as arguments.
The status document is the one GET /v1/status returns (docs/api.md; PlanStatus in the OpenAPI document);
fields a daemon does not send are shown as unknown rather than failing the view.

The view is laid out for the terminal it is drawn on, 80 columns first: every line fits the width, and a
watch never grows taller than the screen (a terminal cuts what does not fit, and it cut exactly the brokers
that mattered). What does not fit gives way in this order: the brokers without moves (summed up as
"+N more"), the waiting moves' detail, the stalled moves beyond the first, then the brokers with moves move
into a denser grid. Brokers receiving replicas come first, then those sending, then the rest.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.text import Text

from reassignd import config_keys
from reassignd.client import ApiUnreachable
from reassignd.units import format_bytes, format_rate

Status = Mapping[str, Any]
FINISHED = {"completed": 0, "cancelled": 1, "failed": 1}
UNLIMITED = 2**31 - 1  # Kafka's int: a movement limit at this value never binds
_STATE_STYLE = {"running": "green", "paused": "yellow", "completed": "bold green", "cancelled": "magenta"}
_OVER = "!"


# ---------------------------------------------------------------------------------------------------------
# Units


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    total = round(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def parse_time(value: Any) -> datetime | None:
    """An API timestamp (ISO 8601, `Z`) or Unix seconds; None when absent or unreadable."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: Any, *, seconds: bool = True) -> str:
    """`2026-01-02 03:04:05Z`: UTC, to the second (no microseconds); `-` when unknown."""
    when = value if isinstance(value, datetime) else parse_time(value)
    if when is None:
        return "-"
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ" if seconds else "%Y-%m-%d %H:%M")


def _percent(done: float, total: float) -> str:
    return f"{100.0 * done / total:.1f}%" if total else "100.0%"


def _bytes_text(p: Mapping[str, Any]) -> str:
    """`done of total (pct)`, or `unknown` before the daemon has measured the plan (queued). The total and
    the daemon's percentage are the work fixed at the start, `bytes_done` that percentage of it (so the
    figure agrees with the percentage and never falls); what producers wrote since shows apart."""
    total, percent, grown = p.get("bytes_total"), p.get("percent"), p.get("bytes_grown")
    if total is None:
        return "unknown"
    done = p.get("bytes_done")
    if done is None:  # a daemon older than `bytes_done`: moved less what producers wrote since
        done = max(0.0, min(float(total), float(p.get("bytes_moved") or 0) - float(grown or 0)))
    shown = f"{float(percent):.1f}%" if percent is not None else _percent(done, total)
    extra = f", +{format_bytes(grown)} written since" if grown else ""
    return f"{format_bytes(done)} of {format_bytes(total)} ({shown}){extra}"


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Iterable[int] = ()
) -> list[str]:
    """A plain text table: what scripts and logs want from human output. Columns in `right` align right."""
    cells = [[str(h) for h in headers], *[["-" if c is None else str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    aligned = set(right)
    return [
        "  ".join(
            c.rjust(w) if i in aligned else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in cells
    ]


def id_ranges(ids: Iterable[int]) -> str:
    """`1-3, 5, 7-9`: broker ids in short."""
    ordered = sorted(set(ids))
    parts: list[str] = []
    start = prev = None
    for b in [*ordered, None]:
        if b is not None and prev is not None and b == prev + 1:
            prev = b
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = b
    return ", ".join(parts)


# ---------------------------------------------------------------------------------------------------------
# Pieces shared by the renderings


def _progress(status: Status) -> Mapping[str, Any]:
    return status.get("progress") or {}


def _tp(entry: Mapping[str, Any]) -> str:
    return f"{entry.get('topic')}-{entry.get('partition')}"


def _partitions_total(status: Status) -> Any:
    return _progress(status).get("partitions_total", status.get("partitions", 0)) or 0


def _ended(status: Status) -> bool:
    return str(status.get("state")) in FINISHED


def _moves(count: Any, limit: Any) -> str:
    """`2/5` (in flight / limit); `2/1!` when a lowered limit is below what was already moving."""
    count = count or 0
    if limit is None or limit >= UNLIMITED:
        return str(count)
    return f"{count}/{limit}{_OVER if count > limit else ''}"


def _since(value: Any, now: datetime | None) -> str:
    since = parse_time(value)
    if since is None:
        return ""
    now = now or datetime.now(UTC)
    return f" since {since:%H:%M:%SZ} ({format_duration(max(0.0, (now - since).total_seconds()))})"


def store_text(status: Status, now: datetime | None = None) -> str | None:
    """The state store in words while it is unavailable or holds every write on its findings (None while
    it is fine)."""
    store = status.get("store")
    if not isinstance(store, Mapping):
        return None
    if store.get("available", True):
        found = store.get("findings") or []
        if not found:
            return None
        return (
            "HELD: the state store does not explain itself; nothing is written until `reassignd recover` "
            f"(docs/runbook.md, ReassigndStoreInconsistent): {'; '.join(str(f) for f in found)}"
        )
    return f"STORE UNAVAILABLE{_since(store.get('since'), now)}: {store.get('error')}; nothing is written"


def cluster_text(status: Status, now: datetime | None = None) -> str:
    """The store while it is unavailable, then the cluster's reachability in words: what every status
    view says first, idle or not."""
    store = store_text(status, now)
    cluster = _cluster_text(status, now)
    return f"{store}; {cluster}" if store else cluster


def _cluster_text(status: Status, now: datetime | None = None) -> str:
    cluster = status.get("cluster")
    if not isinstance(cluster, Mapping):
        return "cluster: not reported by this daemon"
    offline = cluster.get("unreachable_brokers") or []
    if cluster.get("reachable"):
        return f"cluster reachable; brokers offline: {id_ranges(offline)}" if offline else "cluster reachable"
    since = parse_time(cluster.get("since"))
    when = ""
    if since is not None:
        now = now or datetime.now(UTC)
        when = f" since {since:%H:%M:%SZ} ({format_duration(max(0.0, (now - since).total_seconds()))})"
    error = cluster.get("error")
    if not error:
        return f"cluster not reached yet{when}: waiting for a first answer"
    return f"CLUSTER UNREACHABLE{when}: {error}; nothing new starts"


def idle_lines(status: Status, now: datetime | None = None) -> list[str]:
    """The daemon's status while no plan runs: the cluster, then that no plan runs."""
    return [cluster_text(status, now), "no plan is running"]


def outcome_text(status: Status) -> str | None:
    """Where an ended plan left its partitions, and what a cancel is still restoring."""
    p = _progress(status)
    outcome = p.get("outcome")
    if isinstance(outcome, Mapping):
        counts = outcome.get("counts") or {}
        parts = [f"{counts.get('target', 0)} on target"]
        for key, words in (
            ("pre_plan", "back on their pre-plan list"),
            ("unchanged", "never moved"),
            ("dropped", "dropped (topic deleted)"),
        ):
            if counts.get(key):
                parts.append(f"{counts[key]} {words}")
        return f"ended: {', '.join(parts)}"
    cancel = p.get("cancel")
    if isinstance(cancel, Mapping):
        return (
            f"cancelling: {cancel.get('remaining', 0)} of {cancel.get('partitions', 0)} partitions "
            f"still to settle ({cancel.get('to_pre_plan', 0)} back to their pre-plan list, "
            f"{cancel.get('to_target', 0)} finishing on their target)"
        )
    return None


def _eta_text(p: Mapping[str, Any], *, brief: bool = False) -> str:
    """`brief`: "never at this rate" without its figures (the view's stalled moves show them)."""
    eta = p.get("eta_seconds")
    reason = p.get("eta_reason")
    if eta is None and reason:
        # "never at this rate: producers write ...": said as it is, not as an unknown
        if str(reason).startswith("never"):
            return f"ETA {str(reason).split(':')[0] if brief else reason}"
        return f"ETA unknown ({reason})"
    return f"ETA {format_duration(eta)}"


def summary_line(status: Status, now: datetime | None = None) -> str:
    p = _progress(status)
    moved = _bytes_text(p)
    return (
        f"{cluster_text(status, now)}; "
        f"plan {status.get('plan_id')} {status.get('state')}: "
        f"bytes {moved}, "
        f"partitions {p.get('partitions_done', 0)}/{_partitions_total(status)} done, "
        f"{p.get('partitions_in_flight', 0)} moving, {p.get('partitions_waiting', 0)} waiting, "
        f"rate {format_rate(p.get('rate_bytes_per_sec'))}, {_eta_text(p)}, "
        f"stalled {len(status.get('stalled') or [])}"
        + (f", dropped {p['partitions_dropped']}" if p.get("partitions_dropped") else "")
    )


def _stalled_text(entry: Mapping[str, Any]) -> str:
    catchup = format_rate(entry.get("catchup_bytes_per_sec"))
    produce = format_rate(entry.get("produce_bytes_per_sec"))
    return f"{_tp(entry)} -> broker {entry.get('broker')}: catch-up {catchup}, produce {produce}"


def _throttle_text(status: Status) -> str:
    rates = status.get("throttles") or {}
    leader, follower = (
        format_rate(rates.get(config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE)),
        format_rate(rates.get(config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE)),
    )
    return f"throttle: leader {leader}, follower {follower}"


def _header(status: Status, now: datetime) -> str:
    state = str(status.get("state"))
    line = f"plan {status.get('plan_id')}  {state}"
    started, finished = parse_time(status.get("started_at")), parse_time(status.get("finished_at"))
    if started is not None and finished is not None:
        took = format_duration((finished - started).total_seconds())
        return f"{line}  ran {took} from {_when(started, now, seconds=False)}"
    if started is not None:
        ago = format_duration(max(0.0, (now - started).total_seconds()))
        return f"{line}  started {_when(started, now)}, {ago} ago"
    submitted = parse_time(status.get("submitted_at"))
    return f"{line}  submitted {format_time(submitted)}" if submitted is not None else line


def _when(moment: datetime, reference: datetime, *, seconds: bool = True) -> str:
    """The time alone on the reference's (UTC) day, with the date otherwise (to the minute if asked)."""
    moment, reference = moment.astimezone(UTC), reference.astimezone(UTC)
    if moment.date() == reference.date():
        return f"{moment:%H:%M:%SZ}"
    return format_time(moment, seconds=seconds) + ("" if seconds else "Z")


def _waiting_text(status: Status) -> str | None:
    """`waiting 34: 30 for limits (max.incoming... (broker 4)), 4 offline_target`: one line, by reason."""
    waiting = status.get("waiting") or []
    count = _progress(status).get("partitions_waiting") or len(waiting)
    if not count or _ended(status):
        return None
    by_reason: dict[str, list[str]] = {}
    for w in waiting:
        by_reason.setdefault(str(w.get("reason")), []).append(str(w.get("detail") or ""))
    parts = []
    for reason, details in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        common = max(set(details), key=details.count).removeprefix("reassignment.")
        parts.append(f"{len(details)} {reason}" + (f" ({common})" if common else ""))
    listed = len(waiting)
    more = f" (first {listed} listed)" if listed < count else ""
    return f"waiting {count}{more}: " + ", ".join(parts)


def _offline_text(status: Status) -> str | None:
    """`cannot finish while broker 5 is down: 14 partitions (events-2, ...)`: what to re-target."""
    waits = status.get("offline_waits") or {}
    count = waits.get("partitions") or 0
    if not count or _ended(status):
        return None
    brokers = [str(b) for b in waits.get("brokers") or []]
    named = [f"{w['topic']}-{w['partition']}" for w in (waits.get("shown") or [])[:3]]
    more = ", ..." if count > len(named) else ""
    which = f"broker {brokers[0]} is" if len(brokers) == 1 else f"brokers {', '.join(brokers)} are"
    return (
        f"cannot finish while {which} down: {count} partition(s) ({', '.join(named)}{more}); "
        "they complete when it is back, or re-target them"
    )


def _unthrottled_text(status: Status) -> str | None:
    """`leader side unthrottled for 1 move: t-0 (3 out of sync)`: KIP-73 would slow their catch-up too."""
    entries = [] if _ended(status) else list(status.get("leader_unthrottled") or [])
    if not entries:
        return None
    shown = ", ".join(
        f"{e['topic']}-{e['partition']} ({','.join(str(b) for b in e['out_of_sync'])} out of sync)"
        for e in entries[:3]
    )
    more = f" and {len(entries) - 3} more" if len(entries) > 3 else ""
    return (
        f"leader side unthrottled for {len(entries)} move(s): {shown}{more}; the moving replicas are "
        "throttled as followers, the lagging ones catch up unthrottled"
    )


# ---------------------------------------------------------------------------------------------------------
# Brokers


@dataclass(frozen=True)
class _BrokerRow:
    broker: int
    moves_in: int
    moves_out: int
    cells: tuple[str, ...]
    online: bool
    over: bool

    @property
    def moving(self) -> bool:
        return bool(self.moves_in or self.moves_out)


_LIVE_HEADERS = ("BROKER", "IN", "OUT", "LEADER RATE", "FOLLOWER RATE")
_ENDED_HEADERS = ("BROKER", "REPLICAS IN", "OUT", "BYTES IN", "LEADER RATE", "FOLLOWER RATE")


def _live_rows(status: Status) -> list[_BrokerRow]:
    rows = []
    for b in status.get("brokers") or []:
        moves_in, moves_out = int(b.get("moves_in") or 0), int(b.get("moves_out") or 0)
        cells = (
            str(b.get("broker")),
            _moves(moves_in, b.get("limit_in")),
            _moves(moves_out, b.get("limit_out")),
            format_rate(b.get("leader_throttle")),
            format_rate(b.get("follower_throttle")),
        )
        over = any(c.endswith(_OVER) for c in cells[1:3])
        rows.append(
            _BrokerRow(
                int(b.get("broker", 0)), moves_in, moves_out, cells, b.get("online", True) is not False, over
            )
        )
    return sorted(rows, key=_priority)


def _ended_rows(status: Status) -> list[_BrokerRow]:
    outcome = _progress(status).get("outcome") or {}
    peaks = outcome.get("throttles") or {}
    rows = []
    brokers = {int(row["broker"]): row for row in outcome.get("brokers") or []}
    for broker in sorted(set(brokers) | {int(b) for b in peaks}):
        row, peak = brokers.get(broker, {}), peaks.get(str(broker), {})
        moves_in, moves_out = int(row.get("replicas_in", 0)), int(row.get("replicas_out", 0))
        cells = (
            str(broker),
            str(moves_in),
            str(moves_out),
            format_bytes(row.get("bytes_in", 0)),
            format_rate(peak.get("leader")),
            format_rate(peak.get("follower")),
        )
        rows.append(_BrokerRow(broker, moves_in, moves_out, cells, True, False))
    return sorted(rows, key=_priority)


def _priority(row: _BrokerRow) -> tuple[int, int]:
    """Receiving first (what an operator watches), then sending only, then offline, then the rest."""
    group = 0 if row.moves_in else 1 if row.moves_out else 2 if not row.online else 3
    return group, row.broker


def _table(headers: Sequence[str], rows: Sequence[_BrokerRow]) -> list[str]:
    right = {i for i, h in enumerate(headers) if h in ("BROKER", "IN", "OUT", "REPLICAS IN", "BYTES IN")}
    return format_table(headers, [r.cells for r in rows], right)


def _grid(rows: Sequence[_BrokerRow], width: int) -> list[str]:
    """Brokers with moves, several to a line: `  12 in 2/2 out 0/5`."""
    cells = [f"{r.cells[0]:>4} in {r.cells[1]} out {r.cells[2]}" for r in rows]
    size = max((len(c) for c in cells), default=0) + 2
    per_line = max(1, width // size)
    return [
        "".join(c.ljust(size) for c in cells[i : i + per_line]).rstrip()
        for i in range(0, len(cells), per_line)
    ]


# ---------------------------------------------------------------------------------------------------------
# The view


@dataclass(frozen=True)
class Line:
    text: str
    style: str | None = None


def _bar(done: float, total: float, width: int, ascii_only: bool) -> str:
    filled = 0 if total <= 0 else max(0, min(width, round(width * done / total)))
    full, empty = ("#", "-") if ascii_only else ("━", "─")
    return full * filled + (empty * (width - filled) if filled < width else "")


def _wrap(text: str, width: int, style: str | None = None) -> list[Line]:
    return [Line(part, style) for part in textwrap.wrap(text, width, subsequent_indent="  ")] or [Line("")]


def view_lines(
    status: Status,
    *,
    width: int = 80,
    height: int | None = None,
    now: datetime | None = None,
    notice: str | None = None,
    ascii_only: bool = False,
    bars: bool = True,
) -> list[Line]:
    """The status as lines of at most `width` characters, and at most `height` lines when given."""
    now = now or datetime.now(UTC)
    width = max(40, width)
    ended = _ended(status)
    head = _head_lines(status, width, now, ascii_only, bars)
    tail = [Line(notice[:width], "bold yellow")] if notice else []

    rows = _ended_rows(status) if ended else _live_rows(status)
    headers = _ENDED_HEADERS if ended else _LIVE_HEADERS
    movers = [r for r in rows if r.moving or not r.online]
    rest = [r for r in rows if r not in movers]
    table = _table(headers, [*movers, *rest])
    title = Line(
        "brokers: replicas gained and lost, the highest throttle rates applied"
        if ended
        else "brokers: moves in flight / limit, throttle rates in force",
        "dim",
    )
    mover_lines = [Line(line, _style(r)) for line, r in zip(table[1 : 1 + len(movers)], movers, strict=True)]
    rest_lines = [Line(line, "dim") for line in table[1 + len(movers) :]]
    legend = [Line(_LEGEND, "yellow")] if any(r.over for r in rows) else []
    stalled = [] if ended else list(status.get("stalled") or [])
    stalled_lines = [
        Line(f"STALLED {len(stalled)}: the new replica does not catch up with producers", "bold red")
    ]
    stalled_lines += [Line(f"  {_stalled_text(s)}", "red") for s in stalled]
    waiting = _waiting_text(status)
    waiting_lines = _wrap(waiting, width, "dim") if waiting else []
    offline = _offline_text(status)
    waiting_lines = (_wrap(offline, width, "bold yellow") if offline else []) + waiting_lines

    if height is None:  # everything, for a terminal that scrolls or a pipe
        brokers = [title, Line(table[0], "bold"), *mover_lines, *rest_lines] if rows else []
        unthrottled = _unthrottled_text(status)
        notes = _wrap(unthrottled, width, "dim") if unthrottled else []
        body = brokers + legend + (stalled_lines if stalled else []) + waiting_lines + notes
        return _cropped([*head, *body, *tail], width)

    room = height - len(head) - len(tail) - len(legend)
    minimum = (min(2, len(stalled_lines)) if stalled else 0) + (1 if waiting_lines else 0)
    brokers = []
    if rows:
        brokers = [title, Line(table[0], "bold"), *mover_lines]
        if len(brokers) + (1 if rest else 0) > room - minimum:  # the table does not fit: a denser grid
            grid = _grid(movers, width)
            space = max(1, room - minimum - 1 - (1 if rest else 0))
            if len(grid) > space:
                grid = [*grid[: space - 1], f"  +{len(grid) - space + 1} more lines of brokers with moves"]
            brokers = [Line("brokers with moves: in flight / limit", "dim"), *(Line(g) for g in grid)]
            rest_lines = []
    left = room - len(brokers) - (1 if rest else 0)
    if stalled:
        keep = len(stalled_lines)
        if keep > left - (1 if waiting_lines else 0):
            keep = max(1, left - (1 if waiting_lines else 0) - 1)
            stalled_lines = [*stalled_lines[:keep], Line(f"  +{len(stalled) - keep + 1} more stalled", "red")]
        left -= len(stalled_lines)
    waiting_lines = waiting_lines[: max(1, left)] if waiting_lines else []
    left -= len(waiting_lines)
    if rest:
        if len(rest_lines) <= left + 1 and rest_lines:
            brokers += rest_lines
        else:
            shown = max(0, left) if rest_lines else 0
            brokers += [*rest_lines[:shown], Line(_more(rest[shown:], width), "dim")]
    body = [*brokers, *legend, *(stalled_lines if stalled else []), *waiting_lines]
    return _cropped([*head, *body, *tail], width)[:height]


_LEGEND = f"{_OVER} above its limit: lowered while moves ran; they finish, none starts"


def _cropped(lines: list[Line], width: int) -> list[Line]:
    return [
        Line(line.text if len(line.text) <= width else line.text[: width - 3] + "...", line.style)
        for line in lines
    ]


def _head_lines(status: Status, width: int, now: datetime, ascii_only: bool, bars: bool) -> list[Line]:
    p = _progress(status)
    ended = _ended(status)
    reach = cluster_text(status, now)
    lines = _wrap(reach, width, "bold red" if "UNREACHABLE" in reach else None)
    lines.append(Line(_header(status, now), "bold"))
    measured = p.get("bytes_total") is not None
    bytes_text = _bytes_text(p)
    parts_total = _partitions_total(status)
    parts_done = p.get("partitions_done", 0) or 0
    parts_text = f"{parts_done} of {parts_total} done"
    if not ended:
        parts_text += f", {p.get('partitions_in_flight', 0)} moving, {p.get('partitions_waiting', 0)} waiting"
    if p.get("partitions_dropped"):
        parts_text += f", {p['partitions_dropped']} dropped"
    percent = float(p.get("percent") or 0.0) if measured else 0.0
    for label, done, total, text in (
        ("bytes", percent, 100.0, bytes_text),
        ("partitions", float(parts_done), float(parts_total), parts_text),
    ):
        bar = max(10, min(40, width - 12 - len(text)))
        drawn = f"{_bar(done, total, bar, ascii_only)} " if bars else ""
        lines.append(Line(f"{label:<10} {drawn}{text}"))
    if not ended:
        throttle = _throttle_text(status)
        if status.get("state") == "paused":  # no rate or ETA to speak of: nothing new starts
            moving = p.get("partitions_in_flight", 0)
            first = f"paused: {moving} moves in flight finish, none starts; `reassignd resume` goes on"
        else:
            first = f"rate {format_rate(p.get('rate_bytes_per_sec'))}   {_eta_text(p, brief=True)}"
        together = f"{first}   {throttle}"
        # the throttle is never cut in two: on a line of its own when both do not fit
        lines += [Line(together)] if len(together) <= width else [*_wrap(first, width), Line(throttle)]
    note = outcome_text(status)
    if note is not None:
        lines += _wrap(note, width, "bold")
    return lines


def _style(row: _BrokerRow) -> str | None:
    if not row.online:
        return "red"
    if row.over:
        return "yellow"
    return None if row.moving else "dim"


def _more(rows: Sequence[_BrokerRow], width: int) -> str:
    ids = id_ranges(r.broker for r in rows)
    text = f"+{len(rows)} more brokers without moves: {ids}"
    return text if len(text) <= width else text[: width - 3] + "..."


class StatusView:
    """A rich renderable that lays the status out for the console it is drawn on (Live redraws it at the
    terminal's size, so a resized terminal gets a new layout)."""

    def __init__(self, status: Status, *, notice: str | None = None, fit_height: bool = True) -> None:
        self.status = status
        self.notice = notice
        self.fit_height = fit_height

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        height = None
        if self.fit_height:
            height = max(5, (options.height or console.size.height) - 1)  # the cursor's line stays free
        lines = view_lines(
            self.status,
            width=options.max_width,
            height=height,
            notice=self.notice,
            ascii_only=options.ascii_only,
        )
        state = str(self.status.get("state"))
        header = f"plan {self.status.get('plan_id')}  "
        for line in lines:
            text = Text(line.text, style=line.style or "", no_wrap=True, overflow="crop")
            if line.text.startswith(header):
                text.highlight_words([f"  {state}"], _STATE_STYLE.get(state, "bold"))
            yield text


def render_status(status: Status, *, notice: str | None = None, fit_height: bool = False) -> StatusView:
    return StatusView(status, notice=notice, fit_height=fit_height)


# ---------------------------------------------------------------------------------------------------------
# Plain text


def status_lines(status: Status, *, width: int = 80, now: datetime | None = None) -> list[str]:
    """The whole status as plain lines: what `status` prints when stdout is not a terminal."""
    return [line.text for line in view_lines(status, width=width, now=now, bars=False)]


def watch_lines(status: Status, now: datetime) -> list[str]:
    """One timestamped line per interval (plus one per stalled move): a log-friendly watch."""
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if status.get("plan_id") is None:
        return [f"{stamp} {'; '.join(idle_lines(status, now))}"]
    return [
        f"{stamp} {summary_line(status, now)}",
        *(f"{stamp}   STALLED {_stalled_text(s)}" for s in status.get("stalled") or []),
    ]


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
    view = StatusView(status)
    with Live(view, console=console, refresh_per_second=4, transient=False, vertical_overflow="crop") as live:
        while str(status.get("state")) not in FINISHED:
            sleep(interval)
            try:
                status = fetch()
                live.update(StatusView(status), refresh=True)
            except ApiUnreachable as exc:
                live.update(StatusView(status, notice=f"{now():%H:%M:%S} {exc}; retrying"), refresh=True)
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
