"""Reading a configuration: defaults < TOML file < environment < command-line overrides, then validation.

Every problem is collected before anything fails, and each names where the value came from (the file or
the environment variable), the key and the bad value, so an operator fixes a config in one round.
"""

from __future__ import annotations

import os
import shlex
import stat
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from reassignd import config_keys
from reassignd.config.checks import cross_field_problems
from reassignd.config.keys import schema
from reassignd.config.schema import ENV_PREFIX, BadValue, ConfigKey, Secret
from reassignd.engine.limits import flatten_toml
from reassignd.model import InvalidInputError, Problem
from reassignd.suggest import unknown_key

DEFAULT = "default"
ENVIRONMENT = "environment"
OVERRIDE = "command line"
#: Environment variables with our prefix that are not configuration keys.
RESERVED_ENV: Final = frozenset({"REASSIGND_CONFIG"})
_SECRET_NAME_MARKERS: Final = ("password", "secret", "token", "jaas", "credential")
REDACTED: Final = "***"


class Config(Mapping[str, Any]):
    """An immutable, validated configuration: every schema key (None when unset) plus pass-through keys.

    Secret keys hold `Secret` values; `secret(name)` reveals one for the code that must use it.
    """

    __slots__ = ("_ignored_env", "_path", "_sources", "_values")
    _values: Mapping[str, Any]
    _sources: Mapping[str, str]
    _path: str | None
    _ignored_env: tuple[str, ...]

    def __init__(
        self,
        values: Mapping[str, Any],
        sources: Mapping[str, str],
        path: str | None = None,
        ignored_env: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))
        object.__setattr__(self, "_sources", MappingProxyType(dict(sources)))
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_ignored_env", ignored_env)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Config is immutable; load a new one")

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Config(path={self._path!r}, {self.redacted()!r})"

    @property
    def path(self) -> str | None:
        return self._path

    @property
    def ignored_env(self) -> tuple[str, ...]:
        """REASSIGND_* variables that match no key (probably typos): the daemon logs them at start-up."""
        return self._ignored_env

    def source(self, key: str) -> str:
        """Where the value came from: `default`, the file's path, `environment` or `command line`."""
        return self._sources.get(key, DEFAULT)

    def secret(self, key: str) -> str | None:
        value = self._values.get(key)
        return value.reveal() if isinstance(value, Secret) else None

    def with_prefix(self, prefix: str) -> dict[str, Any]:
        """Keys under `prefix.` with the prefix removed (`cluster.client.` -> librdkafka properties)."""
        start = prefix.rstrip(".") + "."
        return {k[len(start) :]: v for k, v in self._values.items() if k.startswith(start) and v is not None}

    def limits(self) -> Any:
        """The engine's `Limits` for the configured reassignment limits."""
        from reassignd.config.limits_bridge import build_limits, limit_key_names

        return build_limits({name: self._values[name] for name in limit_key_names()})

    def client_settings(self) -> dict[str, str]:
        """librdkafka-style client properties, secrets revealed: for the cluster adapter only, never log."""
        settings: dict[str, str] = {
            "bootstrap.servers": ",".join(self._values[config_keys.CLUSTER_BOOTSTRAP_SERVERS])
        }
        for key in schema().values():
            if key.section != "cluster" or key.prefix or key.name.endswith(".file"):
                continue
            if not key.name.startswith(("cluster.security.", "cluster.ssl.", "cluster.sasl.")):
                continue
            value = self._values.get(key.name)
            if value is None:
                continue
            settings[key.name.removeprefix("cluster.")] = (
                value.reveal() if isinstance(value, Secret) else value
            )
        if settings["security.protocol"] in ("PLAINTEXT", "SASL_PLAINTEXT"):
            settings.pop("ssl.endpoint.identification.algorithm", None)
        settings.update({k: str(v) for k, v in self.with_prefix(config_keys.CLUSTER_CLIENT).items()})
        return settings

    def redacted(self) -> dict[str, Any]:
        """Every value, with secrets (and secret-looking pass-through properties) replaced by ***."""
        return {
            key: REDACTED if value is not None and _looks_secret(key, value) else _plain(value)
            for key, value in self._values.items()
        }

    def changed_keys(self, other: Config) -> frozenset[str]:
        keys = set(self._values) | set(other._values)
        return frozenset(k for k in keys if self._values.get(k) != other._values.get(k))


def _looks_secret(key: str, value: Any) -> bool:
    if isinstance(value, Secret):
        return True
    definition = schema().get(key)
    if definition is not None and not definition.prefix:
        return False
    return any(marker in key.lower() for marker in _SECRET_NAME_MARKERS)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


class _Collector:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, where: str, key: str, message: str) -> None:
        self.problems.append(Problem(where, key, message))


def _definition_for(name: str, table: Mapping[str, ConfigKey]) -> ConfigKey | None:
    found = table.get(name)
    if found is not None:
        return None if found.prefix else found
    for key in table.values():
        if key.prefix and name.startswith(key.name + ".") and len(name) > len(key.name) + 1:
            return key
    return None


def is_config_key(name: str) -> bool:
    """Whether `name` is a key of the configuration (a pass-through `cluster.client.*` property included)."""
    return _definition_for(name, schema()) is not None


def _unknown_message(name: str, table: Mapping[str, ConfigKey]) -> str:
    return unknown_key(name, table, listed_by="`reassignd config-reference` lists them")


MAX_CONFIG_BYTES: Final = 4 * 1024 * 1024


def read_toml(path: str | Path) -> dict[str, Any]:
    """The file's keys, flattened; InvalidInputError names the file and what is wrong with it.

    Bounded like every other input: at most MAX_CONFIG_BYTES, UTF-8 (as TOML requires), and an array nested
    too deep for the parser is an error, not a crash. NaN and infinity parse (TOML has them) and are then
    refused by each key's validator.
    """

    def refuse(field: str, message: str) -> InvalidInputError:
        return InvalidInputError("configuration", [Problem(str(path), field, message)])

    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise refuse("(file)", exc.strerror or str(exc)) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise refuse("(file)", f"is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse("(encoding)", f"is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        return dict(flatten_toml(tomllib.loads(text)))
    except tomllib.TOMLDecodeError as exc:
        raise refuse("(TOML)", str(exc)) from None
    except RecursionError:
        raise refuse("(TOML)", "arrays or tables nested too deep") from None
    except ValueError as exc:  # tomllib: an integer of more than 4300 digits
        raise refuse("(TOML)", f"a value cannot be read: {str(exc)[:80]}") from None


def _env_table(table: Mapping[str, ConfigKey]) -> dict[str, ConfigKey]:
    return {key.env_var: key for key in table.values() if not key.prefix}


def _read_secret_file(path: str) -> str:
    """The secret in `path`. A file that group or others may read or write is refused: the secret would be
    as good as public on a shared host (the same rule as ssh's for private keys)."""
    mode = os.stat(path).st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(
            f"is accessible to group or others (mode {stat.S_IMODE(mode):04o}); "
            f"run: chmod 600 {shlex.quote(path)}"
        )
    with open(path, "rb") as handle:
        raw = handle.read(MAX_SECRET_BYTES + 1)
    if len(raw) > MAX_SECRET_BYTES:
        raise ValueError(f"is larger than {MAX_SECRET_BYTES} bytes: not a secret")
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ValueError("is not UTF-8 text") from None
    if not text:
        raise ValueError("is empty")
    return text


MAX_SECRET_BYTES: Final = 64 * 1024


#: `reassignd run` flags (argparse dest) -> the keys they override.
RUN_FLAG_KEYS: Final = {
    "bootstrap_servers": config_keys.CLUSTER_BOOTSTRAP_SERVERS,
    "api_listen": config_keys.API_LISTEN,
    "state_dir": config_keys.STATE_DIR,
    "api_token_file": config_keys.API_TOKEN_FILE,
}


def run_overrides(flags: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides for load_config/reload_config from `reassignd run` flags (argparse `vars(args)`).

    Flags left unset (None) override nothing; pass the same overrides again on SIGHUP.
    """
    return {key: flags[dest] for dest, key in RUN_FLAG_KEYS.items() if flags.get(dest) is not None}


def load_config(
    path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Defaults, then the file, the REASSIGND_* environment and `overrides` (command-line flags).

    Raises InvalidInputError listing every problem; a Config is only ever returned whole and valid.
    """
    table = schema()
    problems = _Collector()
    values: dict[str, Any] = {name: key.default for name, key in table.items() if not key.prefix}
    sources: dict[str, str] = {}
    file_label = str(path) if path is not None else ""

    layers: list[tuple[str, Mapping[str, Any], bool]] = []
    if path is not None:
        layers.append((file_label, read_toml(path), False))
    ignored_env: list[str] = []
    rejected: set[str] = set()
    if env:
        by_env = _env_table(table)
        from_env: dict[str, Any] = {}
        for variable, text in sorted(env.items()):
            if not variable.startswith(ENV_PREFIX) or variable in RESERVED_ENV:
                continue
            definition = by_env.get(variable)
            if definition is None:
                ignored_env.append(variable)
            else:
                from_env[definition.name] = (variable, text)
        layers.append((ENVIRONMENT, from_env, True))
    if overrides:
        layers.append((OVERRIDE, overrides, False))

    for label, raw_values, is_env in layers:
        for name, raw in raw_values.items():
            where = f"environment {raw[0]}" if is_env else label
            raw_value = raw[1] if is_env else raw
            definition = _definition_for(name, table)
            if definition is None:
                problems.add(where, name, _unknown_message(name, table))
                continue
            try:
                if definition.prefix and isinstance(raw_value, bool | int | float):
                    # librdkafka takes every property as a string; TOML `true` means "true".
                    raw_value = str(raw_value).lower() if isinstance(raw_value, bool) else str(raw_value)
                value = definition.convert(raw_value, from_env=is_env)
            except BadValue as exc:
                problems.add(where, name, str(exc))
                rejected.add(name)
                continue
            values[name] = value
            sources[name] = where

    for name, key in table.items():
        if key.secret and values.get(name + ".file"):
            secret_path = values[name + ".file"]
            if values.get(name) is not None:
                problems.add(sources.get(name, DEFAULT), name, f"set both {name} and {name}.file; keep one")
                continue
            try:
                text = _read_secret_file(secret_path)
                problem = key.validator(text) if key.validator is not None else None
                if problem:
                    raise ValueError(problem)
                values[name] = Secret(text)
                sources[name] = f"file {secret_path}"
            except (OSError, ValueError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                problems.add(
                    sources.get(name + ".file", DEFAULT), name + ".file", f"{secret_path!r}: {reason}"
                )
        if key.required and values.get(name) is None and name not in rejected:
            problems.add(file_label or "configuration", name, f"is required (or set {key.env_var})")

    if not problems.problems:
        for where_key, message in cross_field_problems(values):
            problems.add(sources.get(where_key, DEFAULT), where_key, message)
    if problems.problems:
        raise InvalidInputError("configuration", problems.problems)
    return Config(values, sources, file_label or None, tuple(ignored_env))
