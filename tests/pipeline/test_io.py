"""Reading a snapshot file straight into the planner's arrays: the same input as through the snapshot model,
and on anything the quick reading does not accept, the model's own errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from reassignd.model import InvalidInputError, snapshot_to_json
from reassignd.pipeline.io import read_json_input
from reassignd.pipeline.planner import PlanRequest, plan_files_locally, plan_locally
from reassignd.placement.assignment import ClusterInput
from tests.pipeline.clusters import expansion, rackless, random_cluster


@pytest.mark.parametrize("snapshot", [expansion(), rackless(), random_cluster(4)], ids=lambda s: s.cluster_id)
def test_quick_reading_equals_the_model(snapshot: object, tmp_path: Path) -> None:
    path = tmp_path / "prod-eu.json"
    path.write_text(snapshot_to_json(snapshot))  # type: ignore[arg-type]
    quick, cluster_id = read_json_input(str(path))
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
