"""Runtime settings: limits, throttle rates and auto-throttle changed through the API or MQTT, kept durably.

One versioned record in the store holds every runtime change, each with the config file's value it
replaced. The rule between the two:

    a runtime change of a key wins over the config file until the config file's own value of that key
    changes (a SIGHUP, or a restart, with a different value there), or until it is reset
    (`reassignd limits --reset [KEY ...]`, `POST /v1/limits/reset`).

So a restart or an HA failover keeps what operators told the daemon; an edit to the file is never silently
ignored; and a SIGHUP that changes something else keeps the runtime value. Every outcome is logged with
its reason (`reconcile`). Pure: the controller reads and writes the record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from reassignd import config_keys
from reassignd.engine.limits import LIMIT_KEYS, Limits
from reassignd.engine.run import AutoThrottle
from reassignd.model import InvalidInputError, Problem
from reassignd.suggest import unknown_key

AUTO_KEYS: Final = (
    config_keys.AUTO_THROTTLE_ENABLE,
    config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND,
    config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND,
)
RUNTIME_KEYS: Final = (*(k.name for k in LIMIT_KEYS), *AUTO_KEYS)
LONG_MAX: Final = 2**63 - 1
DEFAULT_AUTO_STEP: Final = 10 * 1024 * 1024
DEFAULT_AUTO_MAX: Final = 200 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileSettings:
    """What the config file says (defaults included): the base that runtime changes override."""

    limits: Limits
    auto_throttle: AutoThrottle | None
    auto_step: int
    auto_max: int

    @classmethod
    def of(cls, limits: Limits, auto_throttle: AutoThrottle | None) -> FileSettings:
        """A config file that says these (the auto-throttle's defaults when it is off)."""
        if auto_throttle is None:
            return cls(limits, None, DEFAULT_AUTO_STEP, DEFAULT_AUTO_MAX)
        return cls(limits, auto_throttle, auto_throttle.step, auto_throttle.ceiling)

    def flat(self) -> dict[str, Any]:
        return {
            **self.limits.to_mapping(),
            config_keys.AUTO_THROTTLE_ENABLE: self.auto_throttle is not None,
            config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND: self.auto_step,
            config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND: self.auto_max,
        }


@dataclass(frozen=True, slots=True)
class Effective:
    limits: Limits
    auto_throttle: AutoThrottle | None
    overrides: Mapping[str, Any]
    """The runtime values in force, by key."""


@dataclass(frozen=True, slots=True)
class Reconciled:
    """The runtime record after comparing it with the config file: what stays, what the file took back."""

    document: dict[str, Any]
    kept: dict[str, str]
    dropped: dict[str, str]

    @property
    def changed(self) -> bool:
        return bool(self.dropped)


def overrides_of(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    raw = document.get("overrides")
    return {str(k): v for k, v in raw.items() if isinstance(v, Mapping)} if isinstance(raw, Mapping) else {}


def reconcile(document: Mapping[str, Any], file: FileSettings) -> Reconciled:
    """Runtime changes whose config file value is still the one they replaced stay; the others are taken
    back by the file (the operator edited it since)."""
    base = file.flat()
    kept: dict[str, str] = {}
    dropped: dict[str, str] = {}
    survivors: dict[str, Mapping[str, Any]] = {}
    for key, entry in overrides_of(document).items():
        if key not in base:
            dropped[key] = "no longer a runtime setting"
            continue
        if entry.get("file") == base[key]:
            survivors[key] = entry
            kept[key] = f"runtime {entry.get('value')!r} kept (the config file still says {base[key]!r})"
        else:
            dropped[key] = (
                f"the config file changed it from {entry.get('file')!r} to {base[key]!r}: "
                f"its value replaces the runtime {entry.get('value')!r}"
            )
    return Reconciled({**document, "overrides": survivors}, kept, dropped)


def effective(document: Mapping[str, Any], file: FileSettings) -> Effective:
    """The settings in force: the file's, with the runtime changes that still stand over them."""
    values = {key: entry.get("value") for key, entry in overrides_of(document).items()}
    return _build(file, values)


def _build(file: FileSettings, values: Mapping[str, Any]) -> Effective:
    flat = {**file.flat(), **values}
    problems: list[Problem] = []
    limits = file.limits
    try:
        limits = Limits.from_mapping({k: v for k, v in flat.items() if k not in AUTO_KEYS})
    except InvalidInputError as exc:
        problems += exc.problems
    enable = flat[config_keys.AUTO_THROTTLE_ENABLE]
    step, ceiling = (
        flat[config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND],
        flat[config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND],
    )
    if not isinstance(enable, bool):
        problems.append(
            Problem("limits", config_keys.AUTO_THROTTLE_ENABLE, f"must be true or false, got {enable!r}")
        )
    for key, value in (
        (config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND, step),
        (config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND, ceiling),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LONG_MAX:
            problems.append(
                Problem("limits", key, f"must be an integer of bytes/s from 1 to 2^63-1, got {value!r}")
            )
    if problems:
        raise InvalidInputError("limits", problems)
    auto = AutoThrottle(step=int(step), ceiling=int(ceiling)) if enable else None
    return Effective(limits, auto, dict(values))


def changed(
    document: Mapping[str, Any], file: FileSettings, changes: Mapping[str, Any], at: float
) -> tuple[dict[str, Any], Effective]:
    """The record with `changes` made (validated together with everything in force: all or nothing)."""
    unknown = [
        Problem("limits", k[:80], unknown_key(k, RUNTIME_KEYS)) for k in changes if k not in RUNTIME_KEYS
    ]
    if unknown:
        raise InvalidInputError("limits", unknown)
    overrides = dict(overrides_of(document))
    base = file.flat()
    for key, value in changes.items():
        overrides[key] = {"value": value, "file": base[key], "at": at}
    updated = {**document, "overrides": overrides}
    return updated, effective(updated, file)


def reset(document: Mapping[str, Any], keys: Iterable[str] | None) -> dict[str, Any]:
    """The record without the runtime changes of `keys` (all of them when None)."""
    if keys is None:
        return {**document, "overrides": {}}
    drop = set(keys)
    unknown = [Problem("limits", k[:80], "not a runtime setting") for k in drop if k not in RUNTIME_KEYS]
    if unknown:
        raise InvalidInputError("limits", unknown)
    return {**document, "overrides": {k: v for k, v in overrides_of(document).items() if k not in drop}}
