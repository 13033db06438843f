"""Several log dirs per broker: placement, volume figures, and moves between dirs (AlterReplicaLogDirs)."""

from __future__ import annotations

from typing import Any

import pytest

from reassignd.model import InvalidInputError
from reassignd.sim import KafkaError, SimCluster, load_scenario
from reassignd.sim import errors as e
from reassignd.sim.log_dirs import fetcher_id, java_string_hash

MB = 1_000_000
GB = 1_000_000_000


def _cluster(**overrides: Any) -> SimCluster:
    scenario: dict[str, Any] = {
        "brokers": [
            {
                "id": 1,
                "log_dirs": [
                    {"path": "/a", "total_bytes": 100 * GB, "usable_bytes": 60 * GB},
                    {"path": "/b", "total_bytes": 200 * GB},
                ],
                "log_dir_copy_bytes_per_sec": 50 * MB,
            },
            {"id": 2},
        ],
        "topics": [
            {
                "name": "t",
                "assignment": [[1, 2], [1, 2], [2, 1]],
                "partition_bytes": [10 * MB, 20 * MB, 30 * MB],
            }
        ],
    }
    scenario.update(overrides)
    return SimCluster.from_scenario(load_scenario(scenario))


def _logs(sim: SimCluster, broker: int = 1) -> dict[str, list[tuple[str, int, int, int, bool]]]:
    return dict(sim.describe_log_dirs(broker, None))


def test_new_replicas_go_to_the_dir_with_the_fewest_logs() -> None:
    """LogManager.nextLogDirs: the fewest logs first, ties in log.dirs order."""
    sim = _cluster()
    assert {path: [(t, p) for t, p, *_ in rows] for path, rows in _logs(sim).items()} == {
        "/a": [("t", 0), ("t", 2)],
        "/b": [("t", 1)],
    }
    assert sim.brokers[1].static_configs["log.dirs"] == "/a,/b"


def test_volume_figures_follow_the_logs_in_them() -> None:
    sim = _cluster()
    sim.set_produce_rate("t", 1, 1 * MB)
    (a, b) = sim.log_dir_descriptions(1)
    assert (a.path, a.total_bytes, a.usable_bytes) == ("/a", 100 * GB, 60 * GB)  # as the scenario says
    assert (b.path, b.total_bytes, b.usable_bytes) == ("/b", 200 * GB, 200 * GB - 20 * MB)
    sim.advance(10)
    assert sim.log_dir_descriptions(1)[1].usable_bytes == 200 * GB - 30 * MB  # the log grew by 10 MB
    ((path, _),) = sim.describe_log_dirs(2, None)
    assert path == "/var/lib/kafka/data"


@pytest.mark.parametrize(
    ("broker_dirs", "topic_dirs", "field"),
    [
        ([{"path": "/a", "total_bytes": GB, "usable_bytes": GB}], None, "log_dirs[0].usable_bytes"),
        (["relative/dir"], None, "log_dirs[0].path"),
        (["/a", "/a"], None, "log_dirs[1].path"),
        ([{"path": "/a", "size": 1}], None, "log_dirs[0].size"),
        (["/a"], [["/b", "any"], ["any", "any"], ["any", "any"]], "log_dirs[0]"),
        (["/a"], [["/a"]], "log_dirs"),
    ],
)
def test_bad_log_dirs_are_reported(broker_dirs: list[Any], topic_dirs: Any, field: str) -> None:
    topic: dict[str, Any] = {"name": "t", "assignment": [[1, 2], [1, 2], [2, 1]], "partition_bytes": 10 * MB}
    if topic_dirs is not None:
        topic["log_dirs"] = topic_dirs
    scenario = {"brokers": [{"id": 1, "log_dirs": broker_dirs}, {"id": 2}], "topics": [topic]}
    with pytest.raises(InvalidInputError) as info:
        SimCluster.from_scenario(load_scenario(scenario))
    assert [p.field for p in info.value.problems] == [field], info.value.problems


def test_java_string_hash_and_fetcher_ids() -> None:
    assert [java_string_hash(s) for s in ("", "a", "hello")] == [0, 97, 99162322]
    assert java_string_hash("polygenelubricants") == -(2**31)  # the classic Integer.MIN_VALUE hash
    assert fetcher_id("a", 0, 2) == (31 * 97) % 2 == 1
    assert fetcher_id("polygenelubricants", 0, 3) == 0  # 31 * MIN_VALUE overflows to MIN_VALUE; Utils.abs: 0


def test_a_move_copies_at_the_disk_rate_and_then_replaces_the_log() -> None:
    sim = _cluster()
    sim.alter_replica_log_dir(1, "t", 0, "/b")  # 10 MB at 50 MB/s
    sim.advance(0.1)
    assert _logs(sim)["/b"] == [("t", 0, 5 * MB, 5 * MB, True), ("t", 1, 20 * MB, 0, False)]
    assert ("t", 0, 10 * MB, 0, False) in _logs(sim)["/a"]
    sim.advance(0.1)
    assert _logs(sim)["/b"] == [("t", 0, 10 * MB, 0, False), ("t", 1, 20 * MB, 0, False)]
    assert [r[:2] for r in _logs(sim)["/a"]] == [("t", 2)]


def test_the_alter_log_dirs_quota_throttles_every_copy_and_one_partition_moves_at_a_time() -> None:
    """Two log dirs, two alter-log-dirs threads; t-0 and t-2 hash to the same one (getFetcherId)."""
    sim = _cluster()
    sim.incremental_alter_configs(4, "1", [("replica.alter.log.dirs.io.max.bytes.per.second", 0, str(MB))])
    sim.alter_replica_log_dir(1, "t", 0, "/b")
    sim.alter_replica_log_dir(1, "t", 2, "/b")
    assert fetcher_id("t", 0, 2) == fetcher_id("t", 2, 2)  # the same thread: t-0 first, then t-2
    sim.advance(10)
    assert ("t", 0, 10 * MB, 0, False) in _logs(sim)["/b"]  # alone on the thread, at the whole 1 MB/s
    waiting = next(r for r in _logs(sim)["/b"] if r[:2] == ("t", 2))
    assert waiting[4] and waiting[2] <= 1024 * 1024  # waited for it: at most its first fetch
    sim.advance(31)
    assert ("t", 2, 30 * MB, 0, False) in _logs(sim)["/b"]


def test_a_copy_follows_a_growing_log() -> None:
    sim = _cluster()
    sim.set_produce_rate("t", 0, 10 * MB)  # 10 MB + 10 MB/s against 50 MB/s: caught up after 0.25 s
    sim.alter_replica_log_dir(1, "t", 0, "/b")
    sim.advance(0.24)
    assert any(r[:2] == ("t", 0) and r[4] for r in _logs(sim)["/b"])
    sim.advance(0.02)
    assert any(r[:2] == ("t", 0) and not r[4] for r in _logs(sim)["/b"])


def test_asking_for_the_current_dir_cancels_a_move() -> None:
    sim = _cluster()
    sim.alter_replica_log_dir(1, "t", 0, "/b")
    sim.alter_replica_log_dir(1, "t", 0, "/a")
    assert not any(r[4] for rows in _logs(sim).values() for r in rows)
    sim.advance(1)
    assert [r[:2] for r in _logs(sim)["/a"]] == [("t", 0), ("t", 2)]


def test_a_moving_replica_reassigned_away_takes_its_future_log_with_it() -> None:
    sim = _cluster()
    sim.alter_replica_log_dir(1, "t", 1, "/a")
    sim.alter_partition_reassignment("t", 1, [2])
    assert all(r[:2] != ("t", 1) for rows in _logs(sim).values() for r in rows)
    sim.advance(1)
    assert sim._futures == {}


@pytest.mark.parametrize(
    ("broker", "topic", "partition", "path", "code"),
    [
        (1, "t", 0, "/c", e.LOG_DIR_NOT_FOUND),
        (1, "nope", 0, "/a", e.UNKNOWN_TOPIC_OR_PARTITION),
        (1, "t", 9, "/a", e.UNKNOWN_TOPIC_OR_PARTITION),
    ],
)
def test_alter_replica_log_dir_errors(broker: int, topic: str, partition: int, path: str, code: int) -> None:
    sim = _cluster()
    with pytest.raises(KafkaError) as info:
        sim.alter_replica_log_dir(broker, topic, partition, path)
    assert info.value.code == code


def test_a_replica_not_hosted_yet_is_created_in_the_dir_asked_for() -> None:
    """REPLICA_NOT_AVAILABLE, but LogManager.maybeUpdatePreferredLogDir remembers the dir: the replica a
    later reassignment creates goes there (how kafka-reassign-partitions places log_dirs)."""
    sim = _cluster(
        topics=[{"name": "u", "assignment": [[2]], "partition_bytes": MB}],
    )
    with pytest.raises(KafkaError) as info:
        sim.alter_replica_log_dir(1, "u", 0, "/b")
    assert info.value.code == e.REPLICA_NOT_AVAILABLE
    sim.alter_partition_reassignment("u", 0, [1])
    assert [r[:2] for r in _logs(sim)["/b"]] == [("u", 0)]  # not /a, which has as few logs


@pytest.mark.parametrize("restarted", [False, True])
def test_a_dir_given_before_the_replica_exists_is_kept_in_memory_until_a_restart(restarted: bool) -> None:
    """LogManager.preferredLogDirs is in memory only: a broker restarted between AlterReplicaLogDirs and the
    step that creates the replica puts it where LogManager.nextLogDirs says (/a: as few logs as /b, first)."""
    sim = _cluster(topics=[{"name": "u", "assignment": [[2]], "partition_bytes": MB}])
    with pytest.raises(KafkaError) as info:
        sim.alter_replica_log_dir(1, "u", 0, "/b")
    assert info.value.code == e.REPLICA_NOT_AVAILABLE
    if restarted:
        sim.stop_broker(1)
        sim.start_broker(1)
    sim.alter_partition_reassignment("u", 0, [2, 1])
    assert [path for path, rows in _logs(sim).items() if ("u", 0) in [r[:2] for r in rows]] == [
        "/a" if restarted else "/b"
    ]
