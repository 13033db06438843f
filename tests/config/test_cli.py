"""`reassignd validate-config` and `config-reference` as an operator runs them (a real process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("REASSIGND_")}
    return subprocess.run(
        [sys.executable, "-m", "reassignd", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**base, **(env or {})},
        timeout=60,
        check=False,
    )


def test_validate_config_accepts_the_example_and_hides_secrets(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("very-secret-token-0123456789abcdef")
    token.chmod(0o600)
    result = run(
        "validate-config",
        "config/reassignd.toml",
        "--show",
        "--json",
        env={"REASSIGND_API_TOKEN_FILE": str(token), "REASSIGND_TYPO": "1"},
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["valid"] is True
    assert summary["config"]["api.token"] == "***"
    assert summary["ignored_env"] == ["REASSIGND_TYPO"]
    assert "very-secret-token" not in result.stdout + result.stderr
    assert "REASSIGND_TYPO matches no configuration key" in result.stderr


def test_validate_config_lists_every_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('cluster.bootstrap.servers = ["k:9092"]\nmqtt.port = 0\nstate.store = "etcd"\n')
    result = run("validate-config", str(bad))
    assert result.returncode == 2
    assert "mqtt.port: must be between 1 and 65535, got 0" in result.stderr
    assert "state.store: must be one of sqlite, zookeeper; got 'etcd'" in result.stderr


def test_config_reference_prints_both_formats() -> None:
    markdown = run("config-reference")
    assert markdown.returncode == 0 and markdown.stdout.startswith("# Configuration reference")
    toml = run("config-reference", "--format", "toml")
    assert toml.returncode == 0
    assert toml.stdout == (ROOT / "config" / "reassignd.toml").read_text(encoding="utf-8")


def test_validate_config_says_when_the_cluster_has_no_name(tmp_path: Path) -> None:
    """Without cluster.id every series and alert is labelled with Kafka's opaque cluster id."""
    unnamed = tmp_path / "unnamed.toml"
    unnamed.write_text('cluster.bootstrap.servers = "kafka-1:9092"\n')
    result = run("validate-config", str(unnamed))
    assert result.returncode == 0, result.stderr
    assert "cluster.id is not set" in result.stderr and "opaque" in result.stderr
    result = run("validate-config", str(unnamed), "--json")
    assert json.loads(result.stdout)["notes"] == [result.stderr.strip().removeprefix("reassignd: note: ")]
    named = tmp_path / "named.toml"
    named.write_text('cluster.bootstrap.servers = "kafka-1:9092"\ncluster.id = "prod-eu1"\n')
    result = run("validate-config", str(named))
    assert result.returncode == 0 and result.stderr == "", result.stderr
