"""Bytes and rates in words, the one way every figure an operator reads is written (status, watch, the
ETA's reasons): decimal units, as Kafka's configs and most dashboards count bytes (1.5 GB = 1.5e9 bytes)."""

from __future__ import annotations

_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def format_bytes(value: float | None) -> str:
    if value is None:
        return "?"
    size, unit = float(value), 0
    while abs(size) >= 1000 and unit < len(_UNITS) - 1:
        size, unit = size / 1000, unit + 1
    return f"{size:.0f} {_UNITS[unit]}" if unit == 0 else f"{size:.1f} {_UNITS[unit]}"


def format_rate(value: float | None) -> str:
    return "-" if value is None else f"{format_bytes(value)}/s"
