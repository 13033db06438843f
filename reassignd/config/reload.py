"""SIGHUP: validate the new file, swap in what may change live, keep the old config on any error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reassignd.config.keys import schema
from reassignd.config.loader import Config, load_config
from reassignd.model import InvalidInputError, Problem


@dataclass(frozen=True, slots=True)
class ReloadResult:
    """What a reload did.

    `config` is the configuration now in force: the old one when `problems` is not empty; otherwise the new
    values of reloadable keys with the old values of the others, which wait for a restart
    (`restart_required`). `changed` lists the keys whose values now differ from before; `pending` gives,
    for each key that waits for a restart, (the value in force, the value in the file), secrets redacted.
    """

    config: Config
    problems: tuple[Problem, ...] = ()
    changed: frozenset[str] = frozenset()
    restart_required: frozenset[str] = field(default_factory=frozenset)
    pending: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def _reloadable(key: str) -> bool:
    definition = schema().get(key)
    if definition is None:  # a pass-through property: belongs to its prefix key
        definition = next((d for d in schema().values() if d.prefix and key.startswith(d.name + ".")), None)
    return definition is not None and definition.reloadable


def reload_config(
    current: Config,
    path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ReloadResult:
    """Load `path` (default: the file `current` came from) and merge it into `current` as described above."""
    source = path if path is not None else current.path
    try:
        candidate = load_config(source, env, overrides)
    except InvalidInputError as exc:
        return ReloadResult(current, exc.problems)
    differing = current.changed_keys(candidate)
    restart_required = frozenset(k for k in differing if not _reloadable(k))
    applied = differing - restart_required
    values = {k: current[k] for k in current if k not in applied}
    values.update({k: candidate[k] for k in applied if k in candidate})
    sources = {k: (candidate if k in applied else current).source(k) for k in values}
    merged = Config(values, sources, candidate.path, candidate.ignored_env)
    in_force, in_file = current.redacted(), candidate.redacted()
    pending = {k: (in_force.get(k), in_file.get(k)) for k in sorted(restart_required)}
    return ReloadResult(merged, (), frozenset(applied), restart_required, pending)
