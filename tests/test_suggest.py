"""The one way every reader of keys says a key is unknown: the likely one suggested, else the list."""

from __future__ import annotations

import pytest

from reassignd.suggest import unknown_key

KEYS = ("reassignment.parallel.partition.count", "reassignment.max.incoming.replica.movements.per.broker")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "reassignment.paralel.partition.count",
            "unknown key; did you mean reassignment.parallel.partition.count?",
        ),
        (
            "reassignment.max.incomng.replica.movements.per.broker",
            "unknown key; did you mean reassignment.max.incoming.replica.movements.per.broker?",
        ),
        (
            "colour",
            "unknown key; known: reassignment.max.incoming.replica.movements.per.broker, "
            "reassignment.parallel.partition.count",
        ),
    ],
)
def test_unknown_key(name: str, message: str) -> None:
    assert unknown_key(name, KEYS) == message


def test_a_long_list_is_not_recited() -> None:
    keys = [f"key.number.{i}" for i in range(40)]
    assert unknown_key("colour", keys, listed_by="`reassignd limits` lists them") == (
        "unknown key; `reassignd limits` lists them"
    )
