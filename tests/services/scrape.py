"""Reading a Prometheus scrape in tests the way a query would: by name and the labels asked for, whatever
other labels (the daemon's `cluster`) the series carries."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def sample(text: str | bytes, name: str, **labels: str) -> float | None:
    """The value of the one series of `name` whose labels include `labels`; None when there is none."""
    if isinstance(text, bytes):
        text = text.decode()
    found = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) <= 1, f"{name}{labels} matches {len(found)} series"
    return found[0] if found else None
