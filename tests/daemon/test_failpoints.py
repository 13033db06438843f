"""Parsing of REASSIGND_FAILPOINTS; the signals themselves are exercised by the recovery and HA tests."""

from __future__ import annotations

import signal

import pytest

from reassignd.daemon.failpoints import _parse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("a", {"a": [1, signal.SIGKILL]}),
        ("a=2", {"a": [2, signal.SIGKILL]}),
        ("a=2:kill, b=3:stop", {"a": [2, signal.SIGKILL], "b": [3, signal.SIGSTOP]}),
        ("b=:stop", {"b": [1, signal.SIGSTOP]}),
    ],
)
def test_parse(text: str, expected: dict[str, list[int]]) -> None:
    assert _parse(text) == expected


def test_unknown_action_names_the_point_and_the_action() -> None:
    with pytest.raises(ValueError, match=r"unknown action 'pause' for 'a'"):
        _parse("a=1:pause")
