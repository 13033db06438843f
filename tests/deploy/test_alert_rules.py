"""The alert rules' unit tests, deploy/prometheus/alerts_test.yml, run by `promtool test rules`: each alert
fires when it should (with the labels and the text an operator receives), only after its `for`, and stays
quiet in the healthy case; counters' first events are seen; one cause pages once; every rule has its
section in docs/runbook.md, whose commands are real."""

from __future__ import annotations

import re
import shlex
import subprocess
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import REPO
from tests.deploy.test_monitoring import alert_rules, promtool

RULES_DIR = REPO / "deploy/prometheus"
TESTS = RULES_DIR / "alerts_test.yml"
RUNBOOK = REPO / "docs/runbook.md"


def expectations() -> list[tuple[str, bool]]:
    """(alert, fires) for every alert_rule_test entry of the file, in block or flow style."""
    text = TESTS.read_text()
    found = []
    for match in re.finditer(r"alertname: (\w+)(,? *exp_alerts: *(\[\])?)?", text):
        alert = match.group(1)
        if match.group(2) is None:  # block style: the next exp_alerts line says
            rest = text[match.end() :]
            line = re.search(r"exp_alerts:(.*)", rest)
            assert line is not None
            found.append((alert, line.group(1).strip() != "[]"))
        else:
            found.append((alert, match.group(3) is None))
    return found


def test_promtool_runs_the_alert_rule_tests() -> None:
    result = subprocess.run(
        [promtool(), "test", "rules", TESTS.name],
        cwd=RULES_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr


def test_every_alert_is_tested_firing_and_quiet() -> None:
    alerts = {rule["alert"] for rule in alert_rules()}
    seen = expectations()
    assert {a for a, fires in seen if fires} == alerts, "an alert without a case where it fires"
    assert {a for a, fires in seen if not fires} == alerts, "an alert without a case where it stays quiet"


def test_first_events_of_counters_are_tested() -> None:
    text = TESTS.read_text()
    firsts = re.findall(r"- name: (first event[^\n]*)", text)
    assert len(firsts) >= 2, firsts
    assert "reassignd_config_reloads_total" in text.split("first event - a new daemon")[1]


def cases() -> list[dict[str, Any]]:
    return yaml.safe_load(TESTS.read_text())["tests"]


def test_each_cause_pages_once() -> None:
    """A case named "one cause - ..." says, at each of its times, what every rule does: the rule for that
    cause fires and no other rule fires beside it (a stopped daemon without HA is ReassigndDown alone, an
    outage of Kafka is ReassigndClusterUnreachable alone)."""
    alerts = {rule["alert"] for rule in alert_rules()}
    one_cause = [case for case in cases() if case["name"].startswith("one cause - ")]
    assert len(one_cause) >= 5, [case["name"] for case in one_cause]
    for case in one_cause:
        by_time: dict[str, dict[str, bool]] = {}
        for entry in case["alert_rule_test"]:
            by_time.setdefault(entry["eval_time"], {})[entry["alertname"]] = bool(entry["exp_alerts"])
        last = max(by_time, key=_minutes)
        assert set(by_time[last]) == alerts, (case["name"], sorted(alerts - set(by_time[last])))
        firing = [alert for alert, fires in by_time[last].items() if fires]
        assert len(firing) == 1, (case["name"], firing)


def _minutes(duration: str) -> float:
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?", duration)
    assert match, duration
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


# --- the runbook ----------------------------------------------------------------------------------------


def runbook_sections() -> dict[str, str]:
    text = RUNBOOK.read_text()
    parts = re.split(r"^## (\w+)\n", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_rule_links_its_runbook_section() -> None:
    sections = runbook_sections()
    rules = {rule["alert"]: rule for rule in alert_rules()}
    assert set(sections) == set(rules), "one runbook section per rule, and none for a rule that is gone"
    for alert, rule in rules.items():
        assert rule["annotations"]["runbook_url"] == f"docs/runbook.md#{alert.lower()}", alert
        body = sections[alert]
        assert "**What it means.**" in body, alert
        assert "**What to check" in body, alert
        assert "run.**" in body, alert
        assert re.search(r"`reassignd [a-z-]+", body) or "reassignd " in body, alert


def runbook_commands() -> list[str]:
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", RUNBOOK.read_text(), flags=re.DOTALL):
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command.startswith("reassignd "):
                commands.append(command)
    return commands


@pytest.mark.parametrize("command", runbook_commands())
def test_the_runbook_commands_are_real(command: str) -> None:
    """Every `reassignd ...` line of the runbook's code blocks is a command line reassignd accepts."""
    from reassignd.cli import build_parser

    args = build_parser().parse_args(shlex.split(command)[1:])
    assert callable(args.func)
