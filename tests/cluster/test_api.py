"""Pure values of the adapter's interface: config ops, their merging, config levels."""

from __future__ import annotations

import pytest

from reassignd.cluster.api import (
    ConfigDescription,
    ConfigOp,
    ConfigOpType,
    ConfigSource,
    ConfigValue,
    merge_ops,
)
from reassignd.model import InvalidInputError

KEY = "follower.replication.throttled.replicas"


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ([ConfigOp.set(KEY, "a")], [ConfigOp.set(KEY, "a")]),
        ([ConfigOp.append(KEY, "0:1"), ConfigOp.append(KEY, "1:2,0:1")], [ConfigOp.append(KEY, "0:1,1:2")]),
        ([ConfigOp.subtract(KEY, "0:1"), ConfigOp.subtract(KEY, "2:3")], [ConfigOp.subtract(KEY, "0:1,2:3")]),
        (
            [ConfigOp.append(KEY, "0:1"), ConfigOp.set("other", "x"), ConfigOp.append(KEY, "3:4")],
            [ConfigOp.append(KEY, "0:1,3:4"), ConfigOp.set("other", "x")],
        ),
    ],
)
def test_merge_ops(ops: list[ConfigOp], expected: list[ConfigOp]) -> None:
    assert merge_ops("topic t", ops) == expected


@pytest.mark.parametrize(
    "ops",
    [
        [ConfigOp.set(KEY, "a"), ConfigOp.set(KEY, "b")],
        [ConfigOp.append(KEY, "a"), ConfigOp.subtract(KEY, "a")],
        [ConfigOp.delete(KEY), ConfigOp.append(KEY, "a")],
    ],
)
def test_conflicting_ops_are_refused_naming_the_key(ops: list[ConfigOp]) -> None:
    with pytest.raises(InvalidInputError) as info:
        merge_ops("topic t", ops)
    assert [(p.where, p.field) for p in info.value.problems] == [("topic t", KEY)]


@pytest.mark.parametrize(
    ("key", "op", "value"),
    [
        ("", ConfigOpType.SET, "1"),
        (KEY, ConfigOpType.SET, None),
        (KEY, ConfigOpType.APPEND, None),
        (KEY, ConfigOpType.DELETE, "x"),
    ],
)
def test_bad_ops_are_refused(key: str, op: ConfigOpType, value: str | None) -> None:
    with pytest.raises(InvalidInputError):
        ConfigOp(key, op, value)


def test_dynamic_levels() -> None:
    rate = "leader.replication.throttled.rate"
    description = ConfigDescription(
        {
            rate: ConfigValue(
                rate,
                "10",
                ConfigSource.DYNAMIC_BROKER,
                synonyms=((ConfigSource.DYNAMIC_DEFAULT_BROKER, "5"), (ConfigSource.DEFAULT, "9")),
            ),
            "other": ConfigValue("other", "1", ConfigSource.STATIC_BROKER),
        }
    )
    assert description.dynamic(ConfigSource.DYNAMIC_BROKER) == {rate: "10"}
    assert description.dynamic(ConfigSource.DYNAMIC_DEFAULT_BROKER) == {rate: "5"}
    assert description.dynamic(ConfigSource.DYNAMIC_TOPIC) == {}
    assert ConfigSource.DYNAMIC_BROKER.is_dynamic and not ConfigSource.STATIC_BROKER.is_dynamic
