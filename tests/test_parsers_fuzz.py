"""Every parser of outside input, fuzzed: the only exception is the documented invalid-input error.

Parsers: strictjson, plans (strict and draft), snapshots, the configuration (TOML file and environment),
limit changes, placement requests, MQTT commands, and the CLI's rate and KEY=VALUE arguments. Inputs are
random bytes, random JSON-like trees (deep, wide, huge numbers, odd strings) and valid documents with
random damage. FUZZ_EXAMPLES bounds each test (the default keeps `make test` fast; set
REASSIGND_FUZZ_EXAMPLES=5000 for a long local run).
"""

from __future__ import annotations

import json
import math
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassignd import strictjson
from reassignd.cli.client import parse_assignments, parse_rate
from reassignd.config.loader import load_config
from reassignd.daemon.auth import bearer_token
from reassignd.daemon.mqtt_auth import CommandRejected, CommandVerifier, sign
from reassignd.engine.limits import LIMIT_KEYS, Limits
from reassignd.model import (
    InvalidInputError,
    PlanDraft,
    ReassignmentPlan,
    snapshot_from_dict,
    snapshot_from_json,
    snapshot_to_dict,
)
from reassignd.placement.api import create_replica_placement
from tests.model.test_snapshot import GOOD

FUZZ_EXAMPLES = int(os.environ.get("REASSIGND_FUZZ_EXAMPLES", "100"))
fuzz = settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["events", "orders", "-1", "any", ".", "..", "\ud800", "é", "a" * 300, ""]),
)
trees = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(
            st.one_of(
                st.text(max_size=10),
                st.sampled_from(
                    ["version", "partitions", "topic", "partition", "replicas", "log_dirs", "brokers"]
                ),
            ),
            children,
            max_size=5,
        ),
    ),
    max_leaves=40,
)


def _damaged(text: str, data: st.DataObject) -> bytes:
    raw = bytearray(text.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw)))
        kind = data.draw(st.sampled_from(["insert", "delete", "brackets", "digits"]))
        if kind == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del raw[at : at + data.draw(st.integers(1, 8))]
        elif kind == "brackets":
            depth = data.draw(st.integers(1, 3000))
            raw[at:at] = b"[" * depth + b"]" * data.draw(st.integers(0, depth))
        else:
            raw[at:at] = b"9" * data.draw(st.integers(1, 6000))
    return bytes(raw)


VALID_PLAN = json.dumps(
    {
        "version": 1,
        "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]}],
    }
)
VALID_SNAPSHOT = json.dumps(GOOD)


REFUSED = object()


def _only_invalid_input(function: Any, *args: Any, **kwargs: Any) -> Any:
    """The function's result, or REFUSED when it raised InvalidInputError (with short, located problems)."""
    try:
        return function(*args, **kwargs)
    except InvalidInputError as exc:
        assert exc.problems and all(len(p.message) < 2000 for p in exc.problems), exc
        return REFUSED


# --- JSON documents --------------------------------------------------------------------------------------


@fuzz
@given(st.binary(max_size=2000))
def test_strictjson_on_random_bytes(raw: bytes) -> None:
    _only_invalid_input(strictjson.loads, raw, "x", max_bytes=1000)


@fuzz
@given(trees)
def test_strictjson_reads_back_what_json_writes_or_refuses_it_clearly(tree: Any) -> None:
    text = json.dumps(tree)
    value = _only_invalid_input(strictjson.loads, text, "x", max_bytes=10**6)
    if (
        value is not REFUSED
    ):  # accepted: then it was finite, and reads back unchanged (integral floats as ints)
        assert _finite(tree)
        assert json.dumps(value, sort_keys=True) == json.dumps(_integral_as_int(tree), sort_keys=True)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def _integral_as_int(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) <= 2.0**64:
        return int(Decimal(json.dumps(value)))  # the literal's exact value, as strictjson reads it
    if isinstance(value, list):
        return [_integral_as_int(v) for v in value]
    if isinstance(value, dict):
        return {k: _integral_as_int(v) for k, v in value.items()}
    return value


@fuzz
@given(st.data())
def test_damaged_plans_and_snapshots(data: st.DataObject) -> None:
    _only_invalid_input(ReassignmentPlan.from_json, _damaged(VALID_PLAN, data))
    _only_invalid_input(snapshot_from_json, _damaged(VALID_SNAPSHOT, data))


@fuzz
@given(trees)
def test_plans_and_snapshots_from_any_tree(tree: Any) -> None:
    plan = _only_invalid_input(ReassignmentPlan.from_dict, tree)
    draft = PlanDraft.parse(tree)
    assert (plan is REFUSED) == bool(draft.problems)
    if plan is not REFUSED:
        assert ReassignmentPlan.from_json(plan.to_json()) == plan
    snapshot = _only_invalid_input(snapshot_from_dict, tree)
    if snapshot is not REFUSED:
        assert snapshot_from_dict(snapshot_to_dict(snapshot)) == snapshot


@fuzz
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["topic", "partition", "replicas", "log_dirs", "x"]), scalars | st.lists(scalars)
        ),
        max_size=4,
    )
)
def test_plan_entries_of_any_shape(entries: list[Any]) -> None:
    _only_invalid_input(ReassignmentPlan.from_dict, {"version": 1, "partitions": entries})


# --- settings ---------------------------------------------------------------------------------------------


@fuzz
@given(
    st.dictionaries(
        st.sampled_from([k.name for k in LIMIT_KEYS] + ["reassignment.x", "other"]),
        scalars | st.lists(st.sampled_from(["leader_moves", "larger_first", "smaller_first", "x"])),
        max_size=6,
    )
)
def test_limit_changes(changes: dict[str, Any]) -> None:
    limits = _only_invalid_input(Limits.from_mapping, changes)
    if limits is not REFUSED:
        assert Limits.from_mapping(limits.to_mapping()) == limits


TOML_KEYS = [k.name for k in LIMIT_KEYS] + [
    "api.token",
    "api.max.connections",
    "controller.cycle.interval.seconds",
]
toml_values = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f).replace("inf", "inf").lower()),
    st.text(max_size=20).map(json.dumps),
    st.sampled_from(["true", "[1, [2]]", "{a = 1}", "nan", "-inf", "0x7fffffffffffffffff", "'x'"]),
)


@fuzz
@given(st.dictionaries(st.sampled_from(TOML_KEYS), toml_values, max_size=4), st.binary(max_size=20))
def test_config_files(tmp_path_factory: Any, entries: dict[str, str], noise: bytes) -> None:
    path = Path(tmp_path_factory.mktemp("cfg")) / "c.toml"
    text = 'cluster.bootstrap.servers = ["k:9092"]\n' + "".join(f"{k} = {v}\n" for k, v in entries.items())
    path.write_bytes(text.encode() + noise)
    _only_invalid_input(load_config, path, {})


@fuzz
@given(st.dictionaries(st.sampled_from([k.name for k in LIMIT_KEYS]), st.text(max_size=30), max_size=3))
def test_environment_values(values: dict[str, str]) -> None:
    env = {"REASSIGND_CLUSTER_BOOTSTRAP_SERVERS": "k:9092"}
    env.update({"REASSIGND_" + k.upper().replace(".", "_"): v for k, v in values.items()})
    _only_invalid_input(load_config, None, env)


# --- requests and commands --------------------------------------------------------------------------------


@fuzz
@given(trees)
def test_placement_requests(request: Any) -> None:
    from reassignd.model import ClusterSnapshot

    snapshot = snapshot_from_dict(GOOD)
    if isinstance(request, dict):
        for key in ("num_partitions", "replication_factor"):
            if isinstance(request.get(key), int):
                request[key] = request[key] % 50  # the API bounds sizes before the placer runs (api.py)
    assert isinstance(snapshot, ClusterSnapshot)
    _only_invalid_input(create_replica_placement, snapshot, request)


SECRET = b"fuzz-secret-fuzz-secret-fuzz-secret"


@fuzz
@given(st.one_of(st.binary(max_size=500), trees.map(lambda t: json.dumps(t).encode())), trees)
def test_mqtt_commands(payload: bytes, body: Any) -> None:
    verifier = CommandVerifier(SECRET, 30.0, clock=lambda: 1_700_000_000.0)
    for candidate in (payload, sign(SECRET, body) if isinstance(body, dict) else payload):
        try:
            verifier.verify(candidate)
        except CommandRejected as exc:
            assert exc.reason and len(exc.detail) < 2000


@fuzz
@given(st.text(max_size=40))
def test_cli_arguments(text: str) -> None:
    try:
        rate = parse_rate(text)
        assert 1 <= rate <= 2**63 - 1
    except ValueError:
        pass
    _only_invalid_input(parse_assignments, [text, f"k={text}"])
    assert bearer_token(text) is None or bearer_token(text) == text.strip().partition(" ")[2].strip()
