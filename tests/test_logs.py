"""Logging set-up: secrets redacted, JSON lines, and no stale stream captured at configure time."""

from __future__ import annotations

import io
import json
import sys

import pytest

from reassignd import logs


def test_secrets_are_redacted_and_lines_are_json(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buffer)
    logs.configure("info", json=True)
    logs.get_logger("t").info("connected", sasl_password="hunter2", api_token="abc", broker=1)
    line = json.loads(buffer.getvalue())
    assert line["sasl_password"] == "***" and line["api_token"] == "***" and line["broker"] == 1
    assert "hunter2" not in buffer.getvalue()


def test_a_closed_stream_from_an_earlier_configure_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    logs.configure("info", json=True)
    first.close()
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    logs.get_logger("t").warning("after the first stream closed")
    assert "after the first stream closed" in second.getvalue()


def test_levels_filter() -> None:
    buffer = io.StringIO()
    logs.configure("warning", json=True, stream=buffer)
    log = logs.get_logger("t")
    log.info("quiet")
    log.warning("loud")
    logs.configure("info")  # back to the current stderr for the tests that follow
    assert "quiet" not in buffer.getvalue() and "loud" in buffer.getvalue()
