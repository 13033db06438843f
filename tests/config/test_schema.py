"""Value types and validators of the schema, table-driven and property-based."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.config.schema import (
    BOOL,
    FLOAT,
    INT,
    STRING_LIST,
    BadValue,
    Secret,
    enum,
    parse_host_port,
)


@pytest.mark.parametrize(
    ("value_type", "raw", "expected"),
    [
        (INT, 3, 3),
        (FLOAT, 3, 3.0),
        (FLOAT, 0.25, 0.25),
        (BOOL, True, True),
        (STRING_LIST, ["a:1", " b:2"], ("a:1", "b:2")),
        (STRING_LIST, "a:1,b:2", ("a:1", "b:2")),
        (enum("sqlite", "zookeeper"), "SQLite", "sqlite"),
    ],
)
def test_from_toml_accepts(value_type: object, raw: object, expected: object) -> None:
    assert value_type.from_toml(raw) == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value_type", "raw"),
    [
        (INT, True),
        (INT, 1.5),
        (INT, "3"),
        (FLOAT, float("nan")),
        (FLOAT, "1"),
        (BOOL, "true"),
        (BOOL, 1),
        (STRING_LIST, [1, 2]),
        (enum("a", "b"), "c"),
    ],
)
def test_from_toml_rejects(value_type: object, raw: object) -> None:
    with pytest.raises(BadValue):
        value_type.from_toml(raw)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value_type", "text", "expected"),
    [
        (INT, " 42 ", 42),
        (INT, "1_000", 1000),
        (FLOAT, "1e3", 1000.0),
        (BOOL, "YES", True),
        (BOOL, "0", False),
    ],
)
def test_from_env(value_type: object, text: str, expected: object) -> None:
    assert value_type.from_env(text) == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("text", ["x", "", "inf"])
def test_from_env_rejects_numbers(text: str) -> None:
    with pytest.raises(BadValue):
        FLOAT.from_env(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("localhost:9092", ("localhost", 9092)),
        ("10.0.0.1:1", ("10.0.0.1", 1)),
        ("[::1]:8080", ("::1", 8080)),
        ("host:0", None),
        ("host:65536", None),
        ("host", None),
        (":80", None),
        ("a b:80", None),
    ],
)
def test_host_port(text: str, expected: tuple[str, int] | None) -> None:
    assert parse_host_port(text) == expected


@given(st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True), st.integers(1, 65535))
def test_host_port_round_trip(host: str, port: int) -> None:
    assert parse_host_port(f"{host}:{port}") == (host, port)


def test_secret_never_shows_its_value() -> None:
    secret = Secret("hunter2")
    assert "hunter2" not in repr(secret) + str(secret) + f"{secret}" + repr([secret])
    assert secret.reveal() == "hunter2"
    assert secret == Secret("hunter2") and secret != Secret("other")
