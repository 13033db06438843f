"""Cross-field checks: combinations of individually valid values that cannot work together.

Like Patroni's validator, these catch at start-up (and on SIGHUP) what would otherwise fail hours later
in the middle of a reassignment. Each check returns (key to blame, message naming the values).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from reassignd import config_keys

Values = Mapping[str, Any]
Finding = tuple[str, str]

_RATES = (config_keys.LEADER_REASSIGNMENT_THROTTLED_RATE, config_keys.FOLLOWER_REASSIGNMENT_THROTTLED_RATE)
_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_SSL_PROTOCOLS = ("SSL", "SASL_SSL")
_SSL_FILES = (
    config_keys.CLUSTER_SSL_CA_LOCATION,
    config_keys.CLUSTER_SSL_CERTIFICATE_LOCATION,
    config_keys.CLUSTER_SSL_KEY_LOCATION,
)
_MQTT_TLS_FILES = (
    config_keys.MQTT_TLS_CA_FILE,
    config_keys.MQTT_TLS_CERTIFICATE_FILE,
    config_keys.MQTT_TLS_KEY_FILE,
)


def _set(values: Values, key: str) -> bool:
    return values.get(key) not in (None, "")


def _state_and_ha(v: Values) -> Iterator[Finding]:
    if v[config_keys.STATE_STORE] == "zookeeper" and not _set(v, config_keys.HA_ZOOKEEPER_CONNECT):
        yield config_keys.STATE_STORE, "state.store = 'zookeeper' needs ha.zookeeper.connect"
    if v[config_keys.HA_ENABLE] and not _set(v, config_keys.HA_ZOOKEEPER_CONNECT):
        yield config_keys.HA_ENABLE, "ha.enable = true needs ha.zookeeper.connect"
    if v[config_keys.HA_ENABLE] and v[config_keys.STATE_STORE] != "zookeeper":
        yield (
            config_keys.HA_ENABLE,
            (
                f"ha.enable = true needs state.store = 'zookeeper' (got {v['state.store']!r}): "
                "a standby could not resume the leader's plan from a local SQLite file"
            ),
        )


def _not_above(v: Values, smaller: str, larger: str) -> Iterator[Finding]:
    low, high = v.get(smaller), v.get(larger)
    if isinstance(low, int | float) and isinstance(high, int | float) and low > high:
        yield smaller, f"{smaller} = {low} exceeds {larger} = {high}"


def _api_roles(v: Values) -> Iterator[Finding]:
    read, operator = v.get(config_keys.API_READ_TOKEN), v.get(config_keys.API_TOKEN)
    if read is not None and read == operator:
        yield (
            config_keys.API_READ_TOKEN,
            "must differ from api.token: a reader could otherwise change everything",
        )
    if read is not None and v.get(config_keys.API_READ_OPEN):
        yield config_keys.API_READ_TOKEN, "has no effect with api.read.open = true (reads need no token then)"


def _timing(v: Values) -> Iterator[Finding]:
    yield from _not_above(
        v, config_keys.CONTROLLER_CYCLE_MIN_INTERVAL_SECONDS, config_keys.CONTROLLER_CYCLE_INTERVAL_SECONDS
    )
    yield from _not_above(
        v, config_keys.CLUSTER_RETRY_BACKOFF_SECONDS, config_keys.CLUSTER_RETRY_BACKOFF_MAX_SECONDS
    )


def _auto_throttle(v: Values) -> Iterator[Finding]:
    ceiling = v[config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND]
    yield from _not_above(
        v, config_keys.AUTO_THROTTLE_STEP_BYTES_PER_SECOND, config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND
    )
    if not v[config_keys.AUTO_THROTTLE_ENABLE]:
        return
    for rate_key in _RATES:
        rate = v.get(rate_key)
        if isinstance(rate, int | float) and not isinstance(rate, bool) and rate > ceiling:
            yield (
                config_keys.AUTO_THROTTLE_MAX_BYTES_PER_SECOND,
                (
                    f"auto.throttle.max.bytes.per.second = {ceiling} is below {rate_key} = {rate}: "
                    "auto-throttle could only lower the rate it is meant to raise"
                ),
            )


def _cluster_security(v: Values) -> Iterator[Finding]:
    protocol = v[config_keys.CLUSTER_SECURITY_PROTOCOL]
    if protocol in _SASL_PROTOCOLS:
        mechanism = v.get(config_keys.CLUSTER_SASL_MECHANISM)
        if not _set(v, config_keys.CLUSTER_SASL_MECHANISM):
            yield (
                config_keys.CLUSTER_SASL_MECHANISM,
                f"is required with cluster.security.protocol = {protocol}",
            )
        elif str(mechanism).upper() in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            for needed in (config_keys.CLUSTER_SASL_USERNAME, config_keys.CLUSTER_SASL_PASSWORD):
                if not _set(v, needed):
                    yield needed, f"is required with cluster.sasl.mechanism = {mechanism}"
    else:
        for key in (
            config_keys.CLUSTER_SASL_MECHANISM,
            config_keys.CLUSTER_SASL_USERNAME,
            config_keys.CLUSTER_SASL_PASSWORD,
        ):
            if _set(v, key):
                yield key, f"has no effect with cluster.security.protocol = {protocol} (use SASL_SSL?)"
    if protocol not in _SSL_PROTOCOLS:
        for key in (*_SSL_FILES, config_keys.CLUSTER_SSL_KEY_PASSWORD):
            if _set(v, key):
                yield key, f"has no effect with cluster.security.protocol = {protocol} (use SSL or SASL_SSL?)"
    yield from _pair(v, config_keys.CLUSTER_SSL_CERTIFICATE_LOCATION, config_keys.CLUSTER_SSL_KEY_LOCATION)
    yield from _readable(v, _SSL_FILES)
    yield from _shadowed_pass_through(v)


def _shadowed_pass_through(v: Values) -> Iterator[Finding]:
    """A pass-through property that a typed key already covers would bypass its validation."""
    for key in v:
        if not key.startswith("cluster.client."):
            continue
        property_name = key.removeprefix("cluster.client.")
        typed = "cluster." + property_name
        if typed in v or property_name == "bootstrap.servers":
            yield key, f"use {typed} instead of the pass-through {key}"


def _mqtt(v: Values) -> Iterator[Finding]:
    if _set(v, config_keys.MQTT_PASSWORD) and not _set(v, config_keys.MQTT_USERNAME):
        yield config_keys.MQTT_PASSWORD, "is set but mqtt.username is not"
    if not v[config_keys.MQTT_TLS_ENABLE]:
        for key in _MQTT_TLS_FILES:
            if _set(v, key):
                yield key, "has no effect with mqtt.tls.enable = false"
    yield from _pair(v, config_keys.MQTT_TLS_CERTIFICATE_FILE, config_keys.MQTT_TLS_KEY_FILE)
    yield from _readable(v, _MQTT_TLS_FILES)


def _pair(v: Values, first: str, second: str) -> Iterator[Finding]:
    if _set(v, first) != _set(v, second):
        present, missing = (first, second) if _set(v, first) else (second, first)
        yield missing, f"is required when {present} is set"


def _readable(v: Values, keys: tuple[str, ...]) -> Iterator[Finding]:
    for key in keys:
        path = str(v.get(key) or "")
        if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            yield key, f"{path!r} is not a readable file"


def _engine_limits(v: Values) -> Iterator[Finding]:
    """The reassignment limits are judged by the engine's validator alone (reassignd/engine/limits.py), the
    same one the API, MQTT and `reassignd schedule` use: no second copy of their rules here."""
    from reassignd.config.limits_bridge import limit_key_names, limits_problems

    yield from limits_problems({name: v[name] for name in limit_key_names()})


CHECKS: tuple[Callable[[Values], Iterator[Finding]], ...] = (
    _state_and_ha,
    _api_roles,
    _timing,
    _auto_throttle,
    _cluster_security,
    _mqtt,
    _engine_limits,
)


def cross_field_problems(values: Values) -> list[Finding]:
    return [finding for check in CHECKS for finding in check(values)]
