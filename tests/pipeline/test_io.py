"""Reading a snapshot file straight into the planner's arrays: the same input as through the snapshot model,
and on anything the quick reading does not accept, the model's own errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassignd.model import InvalidInputError, snapshot_to_json
from reassignd.pipeline import io
from reassignd.pipeline.io import read_json_input
from reassignd.pipeline.planner import PlanRequest, plan_files_locally, plan_locally
from reassignd.placement.assignment import ClusterInput
from tests.pipeline.clusters import expansion, rackless, random_cluster


@pytest.mark.parametrize("snapshot", [expansion(), rackless(), random_cluster(4)], ids=lambda s: s.cluster_id)
def test_quick_reading_equals_the_model(
    snapshot: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prod-eu.json"
    path.write_text(snapshot_to_json(snapshot))  # type: ignore[arg-type]
    model_parse = io.snapshot_from_dict

    def only_the_small_parts(doc: Any) -> Any:  # a valid file never falls back to the model's partitions
        assert not doc["partitions"], "the quick reading fell back to the model on a valid snapshot"
        return model_parse(doc)

    monkeypatch.setattr(io, "snapshot_from_dict", only_the_small_parts)
    quick, cluster_id, _ = read_json_input(str(path))
    monkeypatch.undo()
    model = ClusterInput.from_snapshot(snapshot, "prod-eu")  # type: ignore[arg-type]
    assert cluster_id == snapshot.cluster_id  # type: ignore[attr-defined]
    assert quick.name == "prod-eu" and quick.topics == model.topics
    assert quick.racks == model.racks and quick.online == model.online
    for field in ("numbers", "replicas", "sizes", "produce", "leaders", "reassigning"):
        assert np.array_equal(getattr(quick, field), getattr(model, field)), field


def test_files_planned_locally_equal_snapshots_planned_locally(tmp_path: Path) -> None:
    snapshots = [expansion(), random_cluster(2)]
    files = []
    for s in snapshots:
        path = tmp_path / f"{s.cluster_id}.json"
        path.write_text(snapshot_to_json(s))
        files.append(str(path))
    request = PlanRequest("cluster-balance", size_aware=True, exclude_brokers=(1,), seed=3)
    from_files = plan_files_locally(files, request)
    from_snapshots = plan_locally(snapshots, request)
    assert [o.plan for o in from_files] == [o.plan for o in from_snapshots]
    assert from_files[0].before["replicas"].sum() == from_files[0].after["replicas"].sum()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda p: p.update(replicas=[p["replicas"][0], p["replicas"][0]]), "replicas"),
        (lambda p: p.update(isr=[99]), "isr"),
        (lambda p: p.update(partition="3"), "partition"),
        (lambda p: p.update(leader=77), "leader"),
    ],
)
def test_what_the_quick_reading_refuses_the_model_names(change: object, field: str, tmp_path: Path) -> None:
    doc = json.loads(snapshot_to_json(expansion()))
    change(doc["partitions"][3])  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InvalidInputError) as caught:
        read_json_input(str(path))
    assert any(p.field == field for p in caught.value.problems), caught.value.problems


def _raw(doc: dict) -> str:  # type: ignore[type-arg]
    return json.dumps(doc)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: _raw({**d, "topic_configs": {}}), "topic_configs"),
        (lambda d: _raw({**d, "version": 2}), "version"),
        (lambda d: _raw({**d, "brokers": [{**d["brokers"][0], "zone": "a"}, *d["brokers"][1:]]}), "zone"),
        (
            lambda d: _raw(
                {**d, "partitions": [{**d["partitions"][0], "sizebytes": 1}, *d["partitions"][1:]]}
            ),
            "sizebytes",
        ),
        (lambda d: _raw({**d, "topics": [{"name": "x", "config": {}}]}), "config"),
        (lambda d: _raw(d).replace('"version": 1', '"version": 1, "version": 1', 1), "version"),
        (lambda d: _raw(d).replace('"size_bytes": 100', '"size_bytes": NaN', 1), "NaN"),
    ],
    ids=[
        "unknown-field",
        "version",
        "broker-field",
        "partition-field",
        "topic-field",
        "duplicate-key",
        "nan",
    ],
)
def test_the_planner_reads_a_snapshot_as_every_command_does(
    change: object, field: str, tmp_path: Path
) -> None:
    """The issue: `plan` accepted a snapshot with an unknown field (topic_configs) that validate-snapshot and
    place refuse. The planner's quick reading refuses whatever the snapshot model refuses, with its words."""
    from reassignd.model import snapshot_from_json

    text = change(json.loads(snapshot_to_json(expansion())))  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InvalidInputError) as model:
        snapshot_from_json(text)
    with pytest.raises(InvalidInputError) as quick:
        read_json_input(str(path))
    assert quick.value.problems == model.value.problems
    assert any(field in f"{p.field} {p.message}" for p in quick.value.problems), quick.value.problems


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**40) | st.floats(-1e3, 1e3) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4,
)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_quick_reading_refuses_exactly_what_the_model_refuses(
    data: st.DataObject, tmp_path_factory: Any
) -> None:
    """One snapshot reader, whichever command reads: a field of a valid snapshot set to any JSON value (or
    a field added) is refused by the planner's quick reading exactly when the model refuses it, with the
    same problems; accepted, both read the same cluster."""
    from reassignd.model import snapshot_from_json

    doc = json.loads(snapshot_to_json(random_cluster(data.draw(st.integers(0, 50)))))
    section = data.draw(st.sampled_from(["document", "broker", "partition"]))
    target = (
        doc
        if section == "document"
        else data.draw(st.sampled_from(doc["brokers" if section == "broker" else "partitions"]))
    )
    key = data.draw(st.sampled_from([*sorted(target), "extra"]))
    target[key] = data.draw(_JSON_VALUES)
    path = tmp_path_factory.mktemp("snap") / "fuzzed.json"
    path.write_text(json.dumps(doc))
    try:
        model = ClusterInput.from_snapshot(snapshot_from_json(path.read_text()), "fuzzed")
    except InvalidInputError as refused:
        with pytest.raises(InvalidInputError) as quick:
            read_json_input(str(path))
        assert quick.value.problems == refused.problems
        return
    quick_input, _, _ = read_json_input(str(path))
    for field in ("topics", "racks", "online"):
        assert getattr(quick_input, field) == getattr(model, field), field
    for field in ("numbers", "replicas", "sizes", "produce", "leaders", "reassigning"):
        assert np.array_equal(getattr(quick_input, field), getattr(model, field)), field
