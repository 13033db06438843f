"""`reassignd status --watch` in a real terminal: tmux at 80x24 and 200x50, read with capture-pane.

The daemon is the real controller in process, partway into a drain of broker 12 of the guide's cluster,
served by the real API on a loopback port; the CLI runs in tmux as an operator runs it. Every broker
receiving a replica must be on screen with its moves, the view must not scroll its header away, and no
line may be wider than the terminal.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reassignd.daemon.api import create_app, load_openapi, prometheus_metrics_handler, start_api
from reassignd.daemon.controller import Controller
from tests.cli.guide_drain import draining
from tests.services.procs import free_port
from tests.services.tmux import TmuxTerminal, tmux_binary

pytestmark = pytest.mark.skipif(tmux_binary() is None, reason="tmux not installed (`make setup` installs it)")

TOKEN = "watch-test-token-0123456789"
REPO = Path(__file__).resolve().parents[2]
TABLE_ROW = re.compile(r"^\s*(\d+)\s+(\d+)(?:/\d+!?)?\s+(\d+)(?:/\d+!?)?\s")
GRID_CELL = re.compile(r"(\d+) in (\d+)(?:/\d+!?)? out (\d+)")


@dataclass
class Served:
    controller: Controller
    plan_id: str
    url: str


async def serve(controller: Controller, plan_id: str) -> AsyncIterator[Served]:
    app = create_app(
        controller, token=TOKEN, metrics_handler=prometheus_metrics_handler(), openapi=load_openapi()
    )
    port = free_port()
    runner = await start_api(app, "127.0.0.1", port)
    try:
        yield Served(controller, plan_id, f"http://127.0.0.1:{port}")
    finally:
        await runner.cleanup()


@pytest.fixture
async def mild() -> AsyncIterator[Served]:
    """A few cycles in: most brokers receive and send."""
    daemon, plan_id = await draining(3)
    async for served in serve(daemon.controller, plan_id):
        yield served


@pytest.fixture
async def stalled() -> AsyncIterator[Served]:
    """Throttled below the producers: every receiving broker has stalled moves as well."""
    daemon, plan_id = await draining(40, **{"follower.reassignment.throttled.rate": 1_500_000})
    async for served in serve(daemon.controller, plan_id):
        yield served


def brokers_on_screen(screen: list[str]) -> dict[int, tuple[int, int]]:
    """(moves in, moves out) of every broker row or grid cell on the screen."""
    found: dict[int, tuple[int, int]] = {}
    for row in screen:
        line = row.replace("│", " ")  # a boxed table's rows read the same
        table = TABLE_ROW.match(line)
        if table:
            found[int(table[1])] = (int(table[2]), int(table[3]))
            continue
        for cell in GRID_CELL.finditer(line):
            found[int(cell[1])] = (int(cell[2]), int(cell[3]))
    return found


async def watch_in(terminal: TmuxTerminal, served: Served, tmp_path: Path) -> list[str]:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    terminal.start(
        [sys.executable, "-m", "reassignd", "status", "--watch", "--interval", "0.5"],
        {
            "REASSIGNDCTL_API": served.url,
            "REASSIGNDCTL_TOKEN_FILE": str(token),
            "PYTHONPATH": str(REPO),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
        },
    )
    return await terminal.wait_for(lambda screen: len(brokers_on_screen(screen)) > 1)


def check_screen(screen: list[str], served: Served, width: int, height: int) -> dict[int, tuple[int, int]]:
    status = served.controller.plan_status(served.plan_id)
    assert len(screen) <= height
    assert all(len(line) <= width for line in screen), "a line wider than the terminal wrapped"
    assert screen[0] == "cluster reachable", "the cluster first:\n" + "\n".join(screen)
    assert screen[1].startswith(f"plan {served.plan_id}  running"), "the header scrolled away:\n" + "\n".join(
        screen
    )
    shown = brokers_on_screen(screen)
    receiving = {b["broker"]: (b["moves_in"], b["moves_out"]) for b in status["brokers"] if b["moves_in"]}
    assert len(receiving) >= 10, "the drain must keep many brokers receiving at once"
    missing = set(receiving) - set(shown)
    assert not missing, f"receiving brokers not on screen: {sorted(missing)}\n" + "\n".join(screen)
    assert {b: shown[b] for b in receiving} == receiving, "moves as the daemon reports them"
    return shown


@pytest.mark.parametrize(("width", "height"), [(80, 24), (200, 50)])
async def test_every_receiving_broker_is_on_screen(
    mild: Served, tmp_path: Path, width: int, height: int
) -> None:
    terminal = TmuxTerminal(width, height)
    try:
        screen = await watch_in(terminal, mild, tmp_path)
        shown = check_screen(screen, mild, width, height)
        if height == 50:
            assert len(shown) == 16 and not any("more brokers" in line for line in screen), "room for all"
    finally:
        terminal.close()


@pytest.mark.parametrize(("width", "height"), [(80, 24), (200, 50)])
async def test_stalled_moves_do_not_push_receiving_brokers_off_screen(
    stalled: Served, tmp_path: Path, width: int, height: int
) -> None:
    terminal = TmuxTerminal(width, height)
    try:
        screen = await watch_in(terminal, stalled, tmp_path)
        check_screen(screen, stalled, width, height)
        count = len(stalled.controller.plan_status(stalled.plan_id)["stalled"])
        assert any(line.startswith(f"STALLED {count}:") for line in screen)
        listed = [line for line in screen if " -> broker " in line]
        more = [line for line in screen if "more stalled" in line]
        assert listed and (len(listed) == count or more), "the stalled moves, or how many are not listed"
    finally:
        terminal.close()
