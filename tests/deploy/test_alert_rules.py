"""The alert rules' unit tests, deploy/prometheus/alerts_test.yml, run by `promtool test rules`: each alert
fires when it should (with the labels and the text an operator receives), only after its `for`, and stays
quiet in the healthy case; counters' first events are seen."""

from __future__ import annotations

import re
import subprocess

from tests.deploy.conftest import REPO
from tests.deploy.test_monitoring import alert_rules, promtool

RULES_DIR = REPO / "deploy/prometheus"
TESTS = RULES_DIR / "alerts_test.yml"


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
