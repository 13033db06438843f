"""The building blocks of the configuration schema: value types, validators, secrets and key definitions.

Schema-first, like Kafka's `ConfigDef`: every key is declared once with its type, default, documentation,
validator, whether SIGHUP may change it and whether it is secret. Everything else — parsing, environment
overrides, the reference documentation, the example file — is derived from these declarations.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

ENV_PREFIX: Final = "REASSIGND_"

#: A validator returns None when the (already typed) value is fine, else a message such as "must be >= 1".
Validator = Callable[[Any], str | None]


class Secret:
    """A secret value that cannot reach a log or a dump by accident: `str()` and `repr()` show `***`."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


class BadValue(ValueError):
    """A value of the wrong type; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class ValueType:
    """How a key's value is read from TOML and from an environment variable, and written back as TOML."""

    name: str
    from_toml: Callable[[Any], Any]
    from_env: Callable[[str], Any]
    choices: tuple[str, ...] = ()


def _describe(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def _int_from_toml(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadValue(f"must be an integer, got {_describe(value)}")
    return value


def _int_from_env(text: str) -> int:
    try:
        return int(text.strip().replace("_", ""), 10)
    except ValueError:
        raise BadValue(f"must be an integer, got {text!r}") from None


def _float_from_toml(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadValue(f"must be a number, got {_describe(value)}")
    if not math.isfinite(value):
        raise BadValue(f"must be a finite number, got {value!r}")
    return float(value)


def _float_from_env(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise BadValue(f"must be a number, got {text!r}") from None
    return _float_from_toml(value)


_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def _bool_from_toml(value: Any) -> bool:
    if not isinstance(value, bool):
        raise BadValue(f"must be true or false, got {_describe(value)}")
    return value


def _bool_from_env(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise BadValue(f"must be true or false (or 1/0, yes/no, on/off), got {text!r}")


def _str_from_toml(value: Any) -> str:
    if not isinstance(value, str):
        raise BadValue(f"must be a string, got {_describe(value)}")
    return value


def _list_from_toml(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return _list_from_env(value)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadValue(f"must be a list of strings, got {_describe(value)}")
    return tuple(item.strip() for item in value)


def _list_from_env(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


INT: Final = ValueType("integer", _int_from_toml, _int_from_env)
FLOAT: Final = ValueType("number", _float_from_toml, _float_from_env)
BOOL: Final = ValueType("boolean", _bool_from_toml, _bool_from_env)
STRING: Final = ValueType("string", _str_from_toml, str)
PATH: Final = ValueType("path", _str_from_toml, str)
STRING_LIST: Final = ValueType("list of strings", _list_from_toml, _list_from_env)


def enum(*choices: str, case_sensitive: bool = False) -> ValueType:
    """A string from a fixed set; matched case-insensitively and returned in its declared spelling."""
    canonical = {c if case_sensitive else c.lower(): c for c in choices}

    def parse(value: Any) -> str:
        text = _str_from_toml(value)
        found = canonical.get(text if case_sensitive else text.lower())
        if found is None:
            raise BadValue(f"must be one of {', '.join(choices)}; got {text!r}")
        return found

    return ValueType("one of " + ", ".join(choices), parse, parse, choices)


# ---------------------------------------------------------------------------------------------------------
# Validators (run on typed values)


def between(low: float, high: float) -> Validator:
    return lambda v: None if low <= v <= high else f"must be between {low:g} and {high:g}, got {v!r}"


def greater_than(low: float, at_most: float | None = None) -> Validator:
    """`> low`, and `<= at_most` when given (every duration has a sane upper bound)."""
    if at_most is None:
        return lambda v: None if v > low else f"must be > {low:g}, got {v!r}"
    return lambda v: None if low < v <= at_most else f"must be > {low:g} and <= {at_most:g}, got {v!r}"


def min_length(low: int) -> Validator:
    """For secrets: the message gives the length, never the value."""
    return lambda v: None if len(v) >= low else f"is {len(v)} characters long; use at least {low}"


def matches(pattern: str, what: str) -> Validator:
    compiled = re.compile(pattern)
    return lambda v: None if compiled.fullmatch(v) else f"must be {what}, got {v!r}"


_HOST_PORT = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9._-]+)):(?P<port>\d{1,5})")


def parse_host_port(text: str) -> tuple[str, int] | None:
    """`host:port` or `[v6]:port` -> (host, port); None when malformed or the port is out of range."""
    found = _HOST_PORT.fullmatch(text.strip())
    if found is None:
        return None
    port = int(found["port"])
    if not 0 < port < 65536:
        return None
    return (found["v6"] or found["host"], port)


def host_port(value: str) -> str | None:
    return None if parse_host_port(value) else f"must be HOST:PORT with a port 1-65535, got {value!r}"


def each(validator: Validator) -> Validator:
    def check(values: Sequence[Any]) -> str | None:
        for item in values:
            problem = validator(item)
            if problem:
                return problem
        return None

    return check


def non_empty(values: Sequence[Any]) -> str | None:
    return None if values else "must not be empty"


def all_of(*validators: Validator) -> Validator:
    def check(value: Any) -> str | None:
        for validator in validators:
            problem = validator(value)
            if problem:
                return problem
        return None

    return check


# ---------------------------------------------------------------------------------------------------------
# Key definitions


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One configuration key. `default=None` with `required=False` means "unset" (the feature is off).

    `secret` keys hold `Secret` values and get a companion `<name>.file` key: the secret is read from that
    file at load time (and again on SIGHUP), so it can live outside the config file and the environment.
    `prefix` keys accept any sub-key (`cluster.client.<librdkafka property>`) as a pass-through string.
    """

    name: str
    type: ValueType
    doc: str
    default: Any = None
    validator: Validator | None = None
    reloadable: bool = False
    secret: bool = False
    required: bool = False
    example: Any = None
    prefix: bool = False
    section: str = ""

    @property
    def env_var(self) -> str:
        return env_var_for(self.name)

    def convert(self, raw: Any, *, from_env: bool) -> Any:
        """Typed value or BadValue; secrets come back wrapped in `Secret`."""
        value = self.type.from_env(raw) if from_env and isinstance(raw, str) else self.type.from_toml(raw)
        if self.validator is not None:
            problem = self.validator(value)
            if problem:
                raise BadValue(problem)
        return Secret(value) if self.secret else value


def env_var_for(name: str) -> str:
    """`reassignment.parallel.replica.count` -> `REASSIGND_REASSIGNMENT_PARALLEL_REPLICA_COUNT`."""
    return ENV_PREFIX + re.sub(r"[.\-]", "_", name).upper()


def secret_file_key(key: ConfigKey) -> ConfigKey:
    """The companion `<name>.file` key of a secret key."""
    return ConfigKey(
        name=f"{key.name}.file",
        type=PATH,
        doc=f"A file holding `{key.name}` (surrounding whitespace is stripped); read at start-up and on "
        f"SIGHUP. Preferred over putting the secret in this file. Set at most one of the two.",
        reloadable=key.reloadable,
        section=key.section,
        example=f"/etc/reassignd/{key.name.rsplit('.', 2)[-2]}-{key.name.rsplit('.', 1)[-1]}",
    )
