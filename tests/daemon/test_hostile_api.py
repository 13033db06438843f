"""The API against a hostile but fair user (issue 15), on a real daemon driving `reassignd sim`.

Each test is one reported reproduction: no 500, nothing half-applied, every problem named, the reads behind
a token, slow clients closed within the configured times.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.daemon.conftest import READ_TOKEN
from tests.services.daemon import TOKEN, DaemonProcess

pytestmark = pytest.mark.slow


def raw_request(
    daemon: DaemonProcess,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    token: str | None = TOKEN,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=timeout)
    try:
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw[:1] in (b"{", b"[") else raw
    finally:
        connection.close()


def error_of(body: Any, code: str) -> dict[str, Any]:
    assert isinstance(body, dict) and body["error"]["code"] == code, body
    return dict(body["error"])


def plan(*entries: dict[str, Any]) -> bytes:
    return json.dumps({"version": 1, "partitions": list(entries)}).encode()


# --- bodies that used to answer 500 ----------------------------------------------------------------------


def test_deeply_nested_json_is_a_400_not_a_500(plain_daemon: DaemonProcess) -> None:
    status, body = raw_request(plain_daemon, "POST", "/v1/plans", b"[" * 100_000 + b"]" * 100_000)
    assert status == 400, body
    assert "(depth)" in error_of(body, "invalid_json")["message"]
    status, body = raw_request(plain_daemon, "PATCH", "/v1/limits", b'{"a":' * 5000 + b"1" + b"}" * 5000)
    assert status == 400 and error_of(body, "invalid_json")


def test_an_integer_of_5000_digits_is_a_400_not_a_500(plain_daemon: DaemonProcess) -> None:
    entry = b'{"topic": "events", "partition": 0, "replicas": [' + b"9" * 5000 + b"]}"
    status, body = raw_request(
        plain_daemon, "POST", "/v1/plans", b'{"version": 1, "partitions": [' + entry + b"]}"
    )
    assert status == 400 and "(number)" in error_of(body, "invalid_json")["message"]


def test_nan_in_limits_is_refused_and_nothing_is_applied(plain_daemon: DaemonProcess) -> None:
    before = plain_daemon.request("GET", "/v1/limits")[1]
    for text in (
        b'{"reassignment.stall.window.seconds": NaN}',
        b'{"reassignment.stall.window.seconds": 1e999}',
    ):
        status, body = raw_request(plain_daemon, "PATCH", "/v1/limits", text)
        assert status == 400, body
    assert plain_daemon.request("GET", "/v1/limits")[1] == before


# --- values Kafka (or the validator) refuses ---------------------------------------------------------------


def test_a_rate_above_kafkas_long_is_refused_by_limits_and_throttles(plain_daemon: DaemonProcess) -> None:
    before = plain_daemon.request("GET", "/v1/limits")[1]
    status, body = plain_daemon.request(
        "PATCH", "/v1/throttles", {"leader.reassignment.throttled.rate": 2**63}
    )
    error = error_of(body, "invalid_request")
    assert status == 400 and error["problems"][0]["where"] == "throttles"
    assert "LONG" in error["problems"][0]["message"]
    status, body = plain_daemon.request(
        "PATCH", "/v1/limits", {"follower.reassignment.throttled.rate": 2**63}
    )
    assert status == 400 and error_of(body, "invalid_request")["problems"][0]["where"] == "limits"
    status, body = plain_daemon.request(
        "PATCH", "/v1/limits", {"reassignment.parallel.replica.count": 10**30}
    )
    assert status == 400 and "at most 2147483647" in body["error"]["problems"][0]["message"]
    assert plain_daemon.request("GET", "/v1/limits")[1] == before


def test_movement_limits_are_independent_upper_bounds_live_as_in_the_config(
    plain_daemon: DaemonProcess,
) -> None:
    """KIP-435: validate-config, schedule and the live API agree (tests/cli/test_hostile_cli.py: the rest)."""
    before = plain_daemon.request("GET", "/v1/limits")[1]
    try:
        change = {
            "reassignment.max.concurrent.replica.movements": 1,
            "reassignment.max.incoming.replica.movements.per.broker": 10**9,
        }
        status, body = plain_daemon.request("PATCH", "/v1/limits", change)
        assert status == 200 and {k: body[k] for k in change} == change
        status, body = plain_daemon.request(
            "PATCH", "/v1/limits", {"reassignment.max.concurrent.replica.movements": 3}
        )
        assert status == 200 and body["reassignment.max.concurrent.replica.movements"] == 3
    finally:
        keys = (
            "reassignment.max.concurrent.replica.movements",
            "reassignment.max.incoming.replica.movements.per.broker",
        )
        plain_daemon.request("PATCH", "/v1/limits", {k: before[k] for k in keys})


# --- plans -------------------------------------------------------------------------------------------------


def test_duplicate_and_unknown_keys_are_refused(plain_daemon: DaemonProcess) -> None:
    duplicated = (
        b'{"version": 1, "partitions": [{"topic": "events", "partition": 0, '
        b'"replicas": [1, 2, 3], "replicas": [4, 5, 6]}]}'
    )
    status, body = raw_request(plain_daemon, "POST", "/v1/plans?dry_run=true", duplicated)
    assert status == 400 and "twice" in error_of(body, "invalid_json")["message"]
    status, body = raw_request(
        plain_daemon,
        "POST",
        "/v1/plans?dry_run=true",
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "events", "partition": 0, "replica": [4, 2, 3], "replicas": [4, 2, 3]}
                ],
                "note": 1,
            }
        ).encode(),
    )
    fields = {p["field"] for p in error_of(body, "invalid_plan")["problems"]}
    assert status == 422 and {"replica", "note"} <= fields


def test_an_illegal_topic_name_is_a_422_not_a_503(plain_daemon: DaemonProcess) -> None:
    status, body = raw_request(
        plain_daemon,
        "POST",
        "/v1/plans?dry_run=true",
        plan({"topic": "t" * 100_000, "partition": 0, "replicas": [1]}),
    )
    problems = error_of(body, "invalid_plan")["problems"]
    assert status == 422 and problems[0]["field"] == "topic" and "249" in problems[0]["message"]
    assert len(json.dumps(body)) < 2000, "the 100,000-character name is not echoed back"


def test_a_negative_and_an_unknown_broker_are_both_reported(plain_daemon: DaemonProcess) -> None:
    status, body = raw_request(
        plain_daemon, "POST", "/v1/plans", plan({"topic": "events", "partition": 0, "replicas": [-1, 99, 2]})
    )
    messages = [p["message"] for p in error_of(body, "invalid_plan")["problems"]]
    assert status == 422
    assert any("negative" in m and "-1" in m for m in messages), messages
    assert any("unknown broker id(s) [99]" in m for m in messages), messages


def test_a_plan_overlapping_an_unfinished_plan_is_a_409_conflict(plain_daemon: DaemonProcess) -> None:
    entry = {"topic": "logs", "partition": 3, "replicas": [4, 2, 3]}
    status, first = raw_request(plain_daemon, "POST", "/v1/plans", plan(entry))
    assert status == 201, first
    try:
        status, body = raw_request(plain_daemon, "POST", "/v1/plans", plan(entry))
        error = error_of(body, "conflict")
        assert status == 409 and error["details"] == {"plan_id": first["plan_id"], "partitions": ["logs-3"]}
    finally:
        plain_daemon.request("POST", f"/v1/plans/{first['plan_id']}/cancel")


# --- access ------------------------------------------------------------------------------------------------


READS = ("/v1/status", "/v1/plans", "/v1/limits", "/v1/throttles", "/v1/reassignments", "/metrics")


@pytest.mark.parametrize("path", READS)
def test_reads_need_a_token(plain_daemon: DaemonProcess, path: str) -> None:
    status, body = raw_request(plain_daemon, "GET", path, token=None)
    assert status == 401 and error_of(body, "unauthorized")
    assert raw_request(plain_daemon, "GET", path, token="not-the-token-" * 3)[0] == 401
    assert raw_request(plain_daemon, "GET", path)[0] in (200, 404)  # 404: /v1/status with no plan running


def test_probes_and_the_description_stay_open(plain_daemon: DaemonProcess) -> None:
    for path in ("/healthz", "/readyz", "/openapi.json"):
        assert raw_request(plain_daemon, "GET", path, token=None)[0] == 200, path


def test_the_read_token_reads_but_cannot_change_anything(guarded_daemon: DaemonProcess) -> None:
    for path in READS:
        assert raw_request(guarded_daemon, "GET", path, token=READ_TOKEN)[0] in (200, 404), path
    before = guarded_daemon.request("GET", "/v1/limits")[1]
    status, body = raw_request(
        guarded_daemon,
        "PATCH",
        "/v1/limits",
        b'{"reassignment.parallel.partition.count": 3}',
        token=READ_TOKEN,
    )
    assert status == 403 and error_of(body, "forbidden")
    assert guarded_daemon.request("GET", "/v1/limits")[1] == before


# --- the HTTP server ---------------------------------------------------------------------------------------


def test_a_content_length_far_beyond_the_limit_is_answered_at_once(plain_daemon: DaemonProcess) -> None:
    with socket.create_connection(("127.0.0.1", plain_daemon.port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(
            b"POST /v1/plans HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {10**12}\r\n\r\n".encode()
            + b"{" * 1024
        )
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert time.monotonic() - started < 2.0


def _slow_sockets(daemon: DaemonProcess, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=5)
        sock.sendall(b"G")
        sockets.append(sock)
    return sockets


def _closed_within(sockets: list[socket.socket], seconds: float) -> int:
    """How many of the sockets the server closed within `seconds` (one byte sent every 0.3 s meanwhile)."""
    closed: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(closed) < len(sockets):
        for index, sock in enumerate(sockets):
            if index in closed:
                continue
            try:
                sock.sendall(b"E")
                sock.settimeout(0.01)
                data = sock.recv(4096)
                if data == b"" or data.startswith(b"HTTP/1.1 503"):
                    closed.add(index)
            except (TimeoutError, BlockingIOError):
                pass
            except OSError:
                closed.add(index)
        time.sleep(0.3)
    return len(closed)


def test_slow_clients_are_closed_and_connections_are_bounded(guarded_daemon: DaemonProcess) -> None:
    """16 connections at most; 24 slow clients (one header byte per 0.3 s): 8 refused at once, the other 16
    closed by the 1 s header timeout, and the daemon answers again right after."""
    sockets = _slow_sockets(guarded_daemon, 24)
    try:
        started = time.monotonic()
        assert _closed_within(sockets, 4.0) == 24
        assert time.monotonic() - started < 3.5
        assert raw_request(guarded_daemon, "GET", "/healthz", token=None)[0] == 200
    finally:
        for sock in sockets:
            sock.close()


def test_an_idle_kept_alive_connection_is_closed(guarded_daemon: DaemonProcess) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", guarded_daemon.port, timeout=5)
    try:
        connection.request("GET", "/healthz")
        assert connection.getresponse().read()
        sock = connection.sock
        assert sock is not None
        started = time.monotonic()
        sock.settimeout(5)
        assert sock.recv(1) == b""  # closed by the server after api.idle.timeout.seconds = 1.5
        assert 1.0 < time.monotonic() - started < 3.5
    finally:
        connection.close()


def test_a_body_slower_than_the_body_timeout_is_a_408(guarded_daemon: DaemonProcess) -> None:
    with socket.create_connection(("127.0.0.1", guarded_daemon.port), timeout=5) as sock:
        sock.sendall(
            b"PATCH /v1/limits HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n".encode()
            + b"{"
        )
        started = time.monotonic()
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"request_timeout" in answer and time.monotonic() - started < 3.0


def test_status_watch_json_into_a_closed_pipe_ends_quietly(plain_daemon: DaemonProcess) -> None:
    status, body = raw_request(
        plain_daemon, "POST", "/v1/plans", plan({"topic": "logs", "partition": 2, "replicas": [5, 3, 1]})
    )
    assert status == 201, body
    plan_id = body["plan_id"]
    try:
        plain_daemon.request("POST", f"/v1/plans/{plan_id}/pause")  # a paused plan never ends the watch
        result = subprocess.run(
            f"set -o pipefail; {sys.executable} -m reassignd status {plan_id} --watch --json --interval 0.05 "
            f"--api {plain_daemon.url} --token-file {plain_daemon.token_file} | head -n 2 > /dev/null",
            shell=True,
            executable="/bin/bash",
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
        assert result.returncode == 141
    finally:
        plain_daemon.request("POST", f"/v1/plans/{plan_id}/cancel")
