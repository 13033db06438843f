"""`reassignd anomalies` as an operator runs it, against the daemon's API over the in-memory service (one
broker failure proposed, tests/daemon/fake_service.py)."""

from __future__ import annotations

import pytest

from tests.cli.test_client import Daemon, cli, daemon

__all__ = ["daemon"]
pytestmark = pytest.mark.slow


async def test_list_approve_and_a_second_approval_refused(daemon: Daemon) -> None:
    listed = await cli(daemon, "anomalies")
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    anomaly_id = lines[1].split(":")[0]
    assert lines[0] == "self-healing: propose; 1 anomaly"
    assert lines[1] == f"{anomaly_id}: broker 4 offline too long: proposed"
    assert lines[2] == "  fix: drain, 1 partition(s), 1.0 MB, rehearsed 1m35s"
    assert lines[3] == f"  `reassignd anomalies approve {anomaly_id}` runs it"
    approved = await cli(daemon, "anomalies", "approve", anomaly_id)
    assert approved.code == 0, approved.err
    assert approved.out.splitlines()[0] == f"{anomaly_id}: broker 4 offline too long: executing"
    assert "plan plan-heal: `reassignd status plan-heal` follows it" in approved.out
    again = await cli(daemon, "anomalies", "approve", anomaly_id)
    assert again.code != 0 and "executing" in again.err
    assert (await cli(daemon, "anomalies", "--json")).json()["anomalies"][0]["state"] == "executing"


async def test_approve_without_an_id_or_an_unknown_one_is_refused_naming_it(daemon: Daemon) -> None:
    missing = await cli(daemon, "anomalies", "approve")
    assert missing.code != 0 and "approve needs an id" in missing.err
    unknown = await cli(daemon, "anomalies", "approve", "no-such")
    assert unknown.code != 0 and "no anomaly 'no-such'" in unknown.err
