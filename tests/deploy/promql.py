"""Metric and label names a PromQL expression refers to, and the series names a /metrics scrape exports.

Enough of PromQL for our dashboard and alert rules: string literals, label matchers, range and subquery
brackets, grouping clauses, durations, numbers and Grafana's `$variables` are removed first; what remains
that looks like an identifier and is not a function call or a keyword is a metric name. Selectors without a
metric name (`{__name__=~"..."}`) are refused, since their metric could not be checked.
"""

from __future__ import annotations

import re

KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)
KEYWORDS |= frozenset({"inf", "nan", "atan2"})
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GRAFANA_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+")
_MATCHERS = re.compile(r"\{([^{}]*)\}")
_BRACKETS = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_DURATION = re.compile(r"(?<![\w:.])\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*(?![\w:])")
_NUMBER = re.compile(r"(?<![\w:.])(?:0x[0-9a-fA-F]+|\d*\.?\d+(?:[eE][-+]?\d+)?)(?![\w:])")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_IN_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")


def _without_strings(expr: str) -> str:
    return _STRING.sub('""', expr)


def metric_names(expr: str) -> frozenset[str]:
    text = _GRAFANA_VARIABLE.sub("1", _without_strings(expr))
    if re.search(r"(^|[^\w:])\{", text):
        raise ValueError(f"selector without a metric name in {expr!r}")
    text = _MATCHERS.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    text = _DURATION.sub(" ", text)
    text = _NUMBER.sub(" ", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        name = match.group()
        if name.lower() in KEYWORDS or text[match.end() :].lstrip().startswith("("):
            continue
        names.add(name)
    return frozenset(names)


def label_names(expr: str) -> frozenset[str]:
    """Labels used in matchers and grouping clauses (`le` included)."""
    text = _GRAFANA_VARIABLE.sub("1", _without_strings(expr))
    labels: set[str] = set()
    for matchers in _MATCHERS.findall(text):
        labels.update(_LABEL_IN_MATCHER.findall(matchers))
    for _, grouping in _GROUPING.findall(text):
        labels.update(name.strip() for name in grouping.split(",") if name.strip())
    return frozenset(labels)


def exported_series(scrape: str) -> dict[str, frozenset[str]]:
    """Series name -> its label names, from a text-format scrape: every sample, and for families declared
    by `# TYPE` but without samples yet (labelled children not created), the names they will expose."""
    series: dict[str, set[str]] = {}
    for line in scrape.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            names = [name + s for s in ("_bucket", "_sum", "_count")] if kind == "histogram" else [name]
            for each in names:
                series.setdefault(each, set())
        elif line and not line.startswith("#"):
            match = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?", line)
            if match is None:
                raise ValueError(f"unparseable sample line {line!r}")
            labels = re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="', match.group(2) or "")
            series.setdefault(match.group(1), set()).update(labels)
    return {name: frozenset(labels) for name, labels in series.items()}
