"""`reassignd brokers` and `reassignd retarget` as an operator runs them, against the daemon's API over the
in-memory service (the daemon's own checks of broker ids and fields)."""

from __future__ import annotations

import pytest

from tests.cli.test_client import Daemon, cli, daemon

__all__ = ["daemon"]
pytestmark = pytest.mark.slow


async def test_decommission_list_recommission(daemon: Daemon) -> None:
    result = await cli(daemon, "brokers", "decommission", "4", "--reason", "disk failing")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "broker 4 decommissioned: it receives no replica until `reassignd brokers recommission 4`",
        "its replicas stay: `reassignd brokers decommission 4 --drain` moves them off",
    ]
    listed = await cli(daemon, "brokers")
    assert listed.code == 0, listed.err
    [row] = [line for line in listed.out.splitlines() if line.split()[0] == "4"]
    assert "decommissioned (disk failing" in row
    assert (await cli(daemon, "brokers", "--json")).json()["decommissioned"] == [4]
    again = await cli(daemon, "brokers", "recommission", "4")
    assert again.code == 0 and again.out.startswith("broker 4 recommissioned")


async def test_bad_ids_are_refused_naming_them(daemon: Daemon) -> None:
    unknown = await cli(daemon, "brokers", "decommission", "99")
    assert unknown.code != 0 and "broker 99 is not in the cluster's metadata" in unknown.err
    missing = await cli(daemon, "brokers", "decommission")
    assert missing.code != 0 and "needs a broker id" in missing.err
    assert daemon.fake.roles == {}


async def test_retarget_without_a_running_plan_says_so(daemon: Daemon) -> None:
    result = await cli(daemon, "retarget")
    assert result.code != 0
    assert "no plan is running" in result.err
