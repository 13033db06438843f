"""Token loading and checking (reassignd.daemon.auth)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.daemon.auth import (
    MIN_TOKEN_LENGTH,
    TOKEN_ENV,
    TOKEN_FILE_ENV,
    bearer_token,
    load_token,
    token_file_is_private,
    token_matches,
)
from reassignd.model import InvalidInputError


def test_the_file_wins_over_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("from-file-token\n")
    env = {TOKEN_ENV: "from-env", TOKEN_FILE_ENV: str(tmp_path / "other")}
    assert load_token(path, env=env) == "from-file-token"
    (tmp_path / "other").write_text("  from-env-file  ")
    assert load_token(None, env=env) == "from-env-file"
    assert load_token(None, env={TOKEN_ENV: "from-env\n"}) == "from-env"
    assert load_token(None, env={}) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "is empty"), ("\n \n", "is empty"), ("two words", "whitespace"), ("short", "use at least 32")],
)
def test_bad_tokens_are_refused_naming_where_they_came_from(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "token"
    path.write_text(content)
    with pytest.raises(InvalidInputError, match=message) as caught:
        load_token(path, env={}, min_length=MIN_TOKEN_LENGTH)
    assert caught.value.problems[0].where == str(path)
    assert content.strip() == "" or content not in str(caught.value)  # the token itself is never echoed


def test_a_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="No such file") as caught:
        load_token(tmp_path / "absent", env={})
    assert caught.value.problems[0].where.endswith("absent")


def test_environment_token_problems_name_the_variable() -> None:
    with pytest.raises(InvalidInputError) as caught:
        load_token(None, env={TOKEN_ENV: "   "})
    assert caught.value.problems[0].field == TOKEN_ENV


def test_private_token_files(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("x" * 20)
    os.chmod(path, 0o600)
    assert token_file_is_private(path)
    os.chmod(path, 0o644)
    assert not token_file_is_private(path)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (None, None),
        ("", None),
        ("Bearer abc", "abc"),
        ("bearer   abc  ", "abc"),
        ("Bearer", None),
        ("Bearer ", None),
        ("Basic abc", None),
        ("abc", None),
    ],
)
def test_bearer_header_parsing(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


@given(st.text(min_size=1), st.text(min_size=1))
def test_token_matches_only_the_same_token(expected: str, presented: str) -> None:
    assert token_matches(expected, presented) == (expected == presented)
    assert token_matches(expected, expected)
    assert not token_matches(None, presented) and not token_matches(expected, None)
