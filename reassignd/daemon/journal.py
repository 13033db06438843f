"""`GET /v1/journal`: the daemon's journal, read a page at a time, with who made each change.

The journal (store/base.py) is append-only and numbered (`seq`); a page is the entries after `after`, in
order, filtered by plan, kinds and time, at most `limit`. `next_after` is the seq to ask from for the next
page (null: nothing after). Time filters are applied to the entries a page reads, so a page may hold fewer
than `limit` entries and still have a next one. Pure but for the store read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, Final

from reassignd.model import InvalidInputError, Problem
from reassignd.store.actor import SELF
from reassignd.store.base import EventKind, JournalEntry

DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000
KINDS: Final = tuple(k.value for k in EventKind)


def parse_time(text: str, field: str) -> float:
    """Unix seconds, or ISO 8601 (`2026-11-27T03:00:00Z`; without a zone: UTC)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInputError(
            "journal query",
            [
                Problem(
                    "query", field, f"must be Unix seconds or ISO 8601 (2026-11-27T03:00:00Z), got {text!r}"
                )
            ],
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def parse_query(query: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The query string (each name to its values) as journal_page's arguments; every problem at once."""
    from reassignd.suggest import unknown_key

    problems: list[Problem] = []
    allowed = {"plan", "kind", "since", "until", "after", "limit"}
    for name in sorted(set(query) - allowed):
        problems.append(Problem("query", name[:80], unknown_key(name, allowed)))
    out: dict[str, Any] = {"plan": None, "kinds": None, "since": None, "until": None, "after": 0}
    out["limit"] = DEFAULT_LIMIT
    for name, values in query.items():
        if name != "kind" and len(values) > 1:
            problems.append(Problem("query", name, "given more than once"))
    if query.get("plan"):
        out["plan"] = query["plan"][0]
    kinds = [k for value in query.get("kind", ()) for k in value.split(",") if k]
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        problems.extend(Problem("query", "kind", f"{unknown_key(k, KINDS)} (got {k!r})") for k in bad[:5])
    elif kinds:
        out["kinds"] = [EventKind(k) for k in kinds]
    for name in ("since", "until"):
        if query.get(name):
            try:
                out[name] = parse_time(query[name][0], name)
            except InvalidInputError as exc:
                problems.extend(exc.problems)
    for name, low, high in (("after", 0, 2**63 - 1), ("limit", 1, MAX_LIMIT)):
        if query.get(name):
            text = query[name][0]
            if not text.isdigit() or not low <= int(text) <= high:
                problems.append(
                    Problem("query", name, f"must be an integer from {low} to {high}, got {text!r}")
                )
            else:
                out[name] = int(text)
    if problems:
        raise InvalidInputError("journal query", problems)
    return out


def entry_json(entry: JournalEntry) -> dict[str, Any]:
    data = dict(entry.data)
    by = data.pop("by", None)
    return {
        "seq": entry.seq,
        "at": entry.at,
        "kind": entry.kind.value,
        "plan_id": entry.plan_id,
        "partition": None if entry.tp is None else str(entry.tp),
        "step": entry.step_index,
        "by": by if isinstance(by, dict) else dict(SELF),
        "data": data,
    }


async def journal_page(
    store: Any,
    *,
    plan: str | None = None,
    kinds: list[EventKind] | None = None,
    since: float | None = None,
    until: float | None = None,
    after: int = 0,
    limit: int = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """One page of the journal (store: an AsyncStore). Reads `limit` entries at a time until the page is
    full or the journal ends; entries past `until` end the reading (seqs and times grow together)."""
    entries: list[dict[str, Any]] = []
    cursor = after
    more = True
    while more and len(entries) < limit:
        batch = await store.journal(cursor, plan_id=plan, kinds=kinds, limit=limit)
        more = len(batch) == limit
        for entry in batch:
            cursor = entry.seq
            if until is not None and entry.at > until:
                more = False
                break
            if since is not None and entry.at < since:
                continue
            entries.append(entry_json(entry))
            if len(entries) == limit:
                break
    return {"entries": entries, "next_after": cursor if more else None}
