"""Reading JSON from people and networks within bounds: one parser for plans, snapshots, API bodies, MQTT.

Python's `json.loads` takes whatever it is given: a document nested 900 levels deep (and a RecursionError
beyond), an integer of 4,000 digits, `NaN` and `Infinity`, `1e999` (read as infinity), a key given twice
(the last one silently wins) and `"\\ud800"` (a string that cannot be written back as UTF-8). Each of those
has crashed or confused a caller. `loads` refuses them all up front with an `InvalidInputError` naming the
rule, so callers only ever see well-formed, finite, unambiguous values. The bounds (documented in
docs/api.md, "Input limits"):

- size: at most `max_bytes` (each caller chooses: 64 MiB for API bodies, 64 KiB for MQTT payloads);
- encoding: UTF-8 (a leading byte-order mark is ignored, as RFC 8259 allows);
- depth: objects and arrays nested at most MAX_DEPTH levels;
- numbers: at most MAX_NUMBER_DIGITS digits in a row, finite (no NaN, Infinity or overflow to infinity);
  a number with no fractional part is an integer (`7420.0` reads as 7420, as JSON Schema has it);
- keys: unique within each object;
- strings: no lone surrogate escapes.

Pure: no I/O. The cost on a 10 MB plan is a few regular-expression passes over the text (tenths of a second)
on top of the parse itself.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any, Final

from reassignd.problems import InvalidInputError, Problem

MAX_DEPTH: Final = 32
MAX_NUMBER_DIGITS: Final = 100

_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")
_LONG_NUMBER = re.compile(rf"[0-9]{{{MAX_NUMBER_DIGITS + 1},}}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_BOM = "\ufeff"
_EXACT_INTEGERS = 2.0**64


class _Refused(ValueError):
    """Raised from inside json.loads by our hooks; becomes one Problem."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def loads(
    raw: bytes | str,
    what: str,
    *,
    max_bytes: int,
    where: str = "(document)",
    max_depth: int = MAX_DEPTH,
) -> Any:
    """The JSON value of `raw`, or InvalidInputError(what) with the one rule it broke."""
    try:
        text = _text(raw, max_bytes)
        _check_shape(text, max_depth)
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
        if _SURROGATE_ESCAPE.search(text):
            _check_encodable(value)
    except _Refused as exc:
        raise InvalidInputError(what, [Problem(where, exc.field, exc.message)]) from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            what, [Problem(where, f"line {exc.lineno} column {exc.colno}", f"not JSON: {exc.msg}")]
        ) from None
    except (ValueError, RecursionError) as exc:  # belt and braces: the checks above should catch these first
        raise InvalidInputError(what, [Problem(where, "(document)", f"not acceptable JSON: {exc}")]) from None
    return value


def _text(raw: bytes | str, max_bytes: int) -> str:
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise _Refused("(size)", f"is {size} bytes; at most {max_bytes} are accepted")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Refused("(encoding)", f"is not UTF-8: {exc.reason} at byte {exc.start}") from None
    return raw.removeprefix(_BOM)


def _check_shape(text: str, max_depth: int) -> None:
    """Nesting depth and number length, read from the text with the strings taken out (C-speed regexes)."""
    skeleton = _STRINGS.sub('""', text)
    if _LONG_NUMBER.search(skeleton):
        raise _Refused("(number)", f"has a number of more than {MAX_NUMBER_DIGITS} digits")
    brackets = _NOT_BRACKETS.sub("", skeleton)
    # Each pass removes the innermost empty pairs: a document d levels deep is empty after d passes.
    for _ in range(max_depth):
        if not brackets:
            return
        shorter = _INNERMOST.sub("", brackets)
        if shorter == brackets:
            return  # unbalanced: json.loads reports where
        brackets = shorter
    if brackets and _INNERMOST.search(brackets):
        raise _Refused("(depth)", f"nests objects and arrays more than {max_depth} levels deep")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused("(duplicate key)", f"gives the key {_short(key)} twice in one object")
            seen.add(key)
    return result


def _no_constant(name: str) -> Any:
    raise _Refused("(number)", f"{name} is not a JSON number; only finite numbers are accepted")


def _finite_float(text: str) -> float | int:
    """A finite number; one with no fractional part is an integer, as JSON Schema counts it (`7420.0`
    and `7.42e3` are the integer 7420), so a limit sent by a JavaScript client is read as meant."""
    value = float(text)
    if not math.isfinite(value):
        raise _Refused("(number)", f"{_short(text)} is too large to be a finite number")
    if value.is_integer() and abs(value) <= _EXACT_INTEGERS:
        exact = Decimal(text)
        if exact == exact.to_integral_value():
            return int(exact)
    return value


def _check_encodable(value: Any) -> None:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused(
            "(encoding)", "has a string with a lone UTF-16 surrogate escape (\\ud800-\\udfff)"
        ) from None


def _short(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
