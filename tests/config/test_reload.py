"""SIGHUP reloads: reloadable keys swap in, the others wait for a restart, a bad file changes nothing."""

from __future__ import annotations

from pathlib import Path

from reassignd.config import load_config, reload_config, run_overrides

BASE = 'cluster.bootstrap.servers = ["k1:9092"]\n'


def test_reloadable_keys_change_and_the_others_wait_for_restart(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(BASE + "reassignment.parallel.replica.count = 1\napi.listen = '127.0.0.1:8080'\n")
    current = load_config(path)
    path.write_text(
        BASE
        + "reassignment.parallel.replica.count = 3\nfollower.reassignment.throttled.rate = 5000\n"
        + "api.listen = '127.0.0.1:9999'\nstate.dir = '/srv/elsewhere'\n"
    )
    result = reload_config(current)
    assert result.ok
    assert result.changed == {"reassignment.parallel.replica.count", "follower.reassignment.throttled.rate"}
    assert result.restart_required == {"api.listen", "state.dir"}
    assert result.config["reassignment.parallel.replica.count"] == 3
    assert result.config.limits().follower_throttled_rate == 5000
    assert result.config["api.listen"] == "127.0.0.1:8080"
    assert result.config["state.dir"] == current["state.dir"]
    assert result.config.path == str(path)


def test_invalid_file_keeps_the_old_config(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(BASE + "reassignment.parallel.replica.count = 2\n")
    current = load_config(path)
    path.write_text(BASE + "reassignment.parallel.replica.count = -1\nlog.level = 'chatty'\n")
    result = reload_config(current)
    assert not result.ok
    assert result.config is current
    assert {p.field for p in result.problems} == {"reassignment.parallel.replica.count", "log.level"}
    assert result.changed == frozenset()


def test_unchanged_file_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(BASE)
    current = load_config(path)
    result = reload_config(current)
    assert result.ok and not result.changed and not result.restart_required
    assert dict(result.config) == dict(current)


def test_rotated_token_file_is_reloaded(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first-token-0123456789abcdef012345")
    token.chmod(0o600)
    path = tmp_path / "c.toml"
    path.write_text(BASE + f"api.token.file = '{token}'\n")
    current = load_config(path)
    token.write_text("second-token-0123456789abcdef01234")
    result = reload_config(current)
    assert result.changed == {"api.token"}
    assert result.config.secret("api.token") == "second-token-0123456789abcdef01234"


def test_run_flags_override_the_file_and_survive_a_reload(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(BASE + "reassignment.parallel.replica.count = 1\n")
    flags = {"bootstrap_servers": "a:1,b:2", "api_listen": "127.0.0.1:9001", "state_dir": None, "other": 1}
    overrides = run_overrides(flags)
    assert overrides == {"cluster.bootstrap.servers": "a:1,b:2", "api.listen": "127.0.0.1:9001"}
    current = load_config(path, {}, overrides)
    assert current["cluster.bootstrap.servers"] == ("a:1", "b:2")
    path.write_text(BASE + "reassignment.parallel.replica.count = 2\n")
    result = reload_config(current, env={}, overrides=overrides)
    assert result.changed == {"reassignment.parallel.replica.count"}
    assert result.restart_required == frozenset()
    assert result.config["api.listen"] == "127.0.0.1:9001"
