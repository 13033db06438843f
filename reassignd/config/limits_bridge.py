"""The reassignment limits as configuration keys, derived from the engine's own table.

The engine owns the limit keys (`reassignd.engine.limits.LIMIT_KEYS`): names, defaults, documentation and
validation. This module only wraps each entry in a `ConfigKey`, so the config file, the environment, the
reference documentation and SIGHUP treat them like every other key — with no second copy of the table.
All limits are reloadable: KIP-435 applies a change from the next decision on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from reassignd.config.schema import BadValue, ConfigKey, ValueType
from reassignd.engine.limits import LIMIT_KEYS, LimitKey, Limits
from reassignd.model import InvalidInputError

#: How an environment variable's text becomes the value the engine's validator expects.
_ENV_PARSERS: dict[str, Any] = {
    "int": lambda text: int(text.strip(), 10),
    "float": lambda text: float(text.strip()),
    "str": str.strip,
    "list[str]": lambda text: [item.strip() for item in text.split(",") if item.strip()],
    "bool": lambda text: {"true": True, "1": True, "false": False, "0": False}[text.strip().lower()],
}
_EXAMPLE_RATE = 50 * 1024 * 1024
_TYPE_NAMES = {
    "int": "integer",
    "float": "number",
    "str": "string",
    "list[str]": "list of strings",
    "bool": "boolean",
}


def _value_type(limit: LimitKey) -> ValueType:
    def from_toml(raw: Any) -> Any:
        converted, error = limit.validate(raw)
        if error is not None:
            raise BadValue(f"{error}, got {raw!r}")
        return tuple(converted) if isinstance(converted, list) else converted

    def from_env(text: str) -> Any:
        parse = _ENV_PARSERS.get(limit.type, str)
        try:
            raw = parse(text)
        except (ValueError, KeyError):
            raise BadValue(f"must be a {_TYPE_NAMES.get(limit.type, limit.type)}, got {text!r}") from None
        return from_toml(raw)

    return ValueType(_TYPE_NAMES.get(limit.type, limit.type), from_toml, from_env)


def _doc(limit: LimitKey) -> str:
    if limit.name.endswith("throttled.rate"):
        return limit.doc + " Unset or -1: no throttle."
    return limit.doc


def limit_config_keys() -> tuple[ConfigKey, ...]:
    """One reloadable ConfigKey per engine limit, in the engine's order."""
    return tuple(
        ConfigKey(
            name=limit.name,
            type=_value_type(limit),
            doc=_doc(limit),
            default=tuple(limit.default) if isinstance(limit.default, list) else limit.default,
            reloadable=True,
            section="reassignment",
            example=_EXAMPLE_RATE if limit.name.endswith("throttled.rate") else None,
        )
        for limit in LIMIT_KEYS
    )


def limit_key_names() -> tuple[str, ...]:
    return tuple(limit.name for limit in LIMIT_KEYS)


def build_limits(values: Mapping[str, Any]) -> Limits:
    """The engine's `Limits` for these (already validated) values; unset keys keep the engine's defaults."""
    return Limits.from_mapping(
        {k: list(v) if isinstance(v, tuple) else v for k, v in values.items() if v is not None}
    )


def limits_problems(values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """The engine's verdict on a set of limit values, as (key, message) pairs."""
    try:
        build_limits(values)
    except InvalidInputError as exc:
        for problem in exc.problems:
            yield problem.field, problem.message
