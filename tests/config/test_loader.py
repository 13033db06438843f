"""Loading: precedence, flattening, typing, every problem at once, secrets and cross-field checks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassignd.config import Secret, load_config, schema
from reassignd.engine.limits import LIMIT_KEYS, Limits
from reassignd.model import InvalidInputError

BASE = 'cluster.bootstrap.servers = ["k1:9092", "k2:9092"]\n'


def write(tmp_path: Path, text: str, name: str = "reassignd.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_of(path: Path | None, env: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    with pytest.raises(InvalidInputError) as caught:
        load_config(path, env)
    return [(p.where, p.field, p.message) for p in caught.value.problems]


def test_defaults_fill_every_key(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, BASE))
    assert config["cluster.bootstrap.servers"] == ("k1:9092", "k2:9092")
    assert config["api.listen"] == "127.0.0.1:8080"
    assert config["state.store"] == "sqlite"
    assert config["reassignment.allow.replication.factor.change"] is False
    assert set(config) >= {k for k, d in schema().items() if not d.prefix}
    assert config.source("api.listen") == "default"
    assert config.source("cluster.bootstrap.servers") == str(tmp_path / "reassignd.toml")


def test_limit_keys_are_the_engines_own() -> None:
    names = [limit.name for limit in LIMIT_KEYS]
    assert [k for k in schema() if k in names] == names
    for limit in LIMIT_KEYS:
        assert schema()[limit.name].reloadable
        assert schema()[limit.name].section == "reassignment"


def test_limits_come_back_as_the_engines_limits(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        BASE
        + """
        reassignment.parallel.replica.count = 3
        reassignment.ordering = ["plan_order"]
        follower.reassignment.throttled.rate = 1000
        """,
    )
    limits = load_config(path).limits()
    assert isinstance(limits, Limits)
    assert limits.parallel_replica_count == 3
    assert limits.ordering == ("plan_order",)
    assert limits.follower_throttled_rate == 1000
    assert limits.leader_throttled_rate is None
    assert load_config(write(tmp_path, BASE, "plain.toml")).limits() == Limits()


@pytest.mark.parametrize(
    "text",
    [
        "reassignment.parallel.replica.count = 2",
        "[reassignment.parallel]\nreplica.count = 2",
        "[reassignment]\nparallel.replica.count = 2",
        "[reassignment.parallel.replica]\ncount = 2",
    ],
)
def test_tables_and_dotted_keys_are_the_same_key(tmp_path: Path, text: str) -> None:
    config = load_config(write(tmp_path, BASE + text + "\n"))
    assert config["reassignment.parallel.replica.count"] == 2


def test_precedence_default_file_env_override(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "controller.cycle.interval.seconds = 2.0\napi.listen = '127.0.0.1:9000'\n")
    env = {"REASSIGND_CONTROLLER_CYCLE_INTERVAL_SECONDS": "3", "REASSIGND_LOG_LEVEL": "DEBUG"}
    config = load_config(path, env, overrides={"api.listen": "0.0.0.0:9100"})
    assert config["controller.cycle.interval.seconds"] == 3.0
    assert (
        config.source("controller.cycle.interval.seconds")
        == "environment REASSIGND_CONTROLLER_CYCLE_INTERVAL_SECONDS"
    )
    assert config["log.level"] == "debug"
    assert config["api.listen"] == "0.0.0.0:9100"
    assert config.source("api.listen") == "command line"


def test_environment_alone_is_enough() -> None:
    config = load_config(
        None, {"REASSIGND_CLUSTER_BOOTSTRAP_SERVERS": "a:1, b:2", "REASSIGND_HA_ENABLE": "no"}
    )
    assert config["cluster.bootstrap.servers"] == ("a:1", "b:2")
    assert config["ha.enable"] is False


@pytest.mark.parametrize(
    ("variable", "text", "key", "expected"),
    [
        ("REASSIGND_REASSIGNMENT_PARALLEL_REPLICA_COUNT", "4", "reassignment.parallel.replica.count", 4),
        (
            "REASSIGND_REASSIGNMENT_ORDERING",
            "plan_order,larger_first",
            "reassignment.ordering",
            ("plan_order", "larger_first"),
        ),
        ("REASSIGND_LEADER_REASSIGNMENT_THROTTLED_RATE", "-1", "leader.reassignment.throttled.rate", None),
        ("REASSIGND_REASSIGNMENT_STALL_WINDOW_SECONDS", "12.5", "reassignment.stall.window.seconds", 12.5),
        ("REASSIGND_AUTO_THROTTLE_ENABLE", "on", "auto.throttle.enable", True),
        ("REASSIGND_MQTT_PORT", "8883", "mqtt.port", 8883),
        ("REASSIGND_CLUSTER_SASL_MECHANISM", "scram-sha-512", "cluster.sasl.mechanism", "SCRAM-SHA-512"),
    ],
)
def test_environment_values_are_typed(variable: str, text: str, key: str, expected: object) -> None:
    env = {"REASSIGND_CLUSTER_BOOTSTRAP_SERVERS": "k:9092", variable: text}
    if key.startswith("cluster.sasl"):
        env |= {
            "REASSIGND_CLUSTER_SECURITY_PROTOCOL": "SASL_SSL",
            "REASSIGND_CLUSTER_SASL_USERNAME": "u",
            "REASSIGND_CLUSTER_SASL_PASSWORD": "p",
        }
    assert load_config(None, env)[key] == expected


def test_unknown_environment_variables_are_reported_not_fatal() -> None:
    env = {
        "REASSIGND_CLUSTER_BOOTSTRAP_SERVERS": "k:9092",
        "REASSIGND_API_TOKN": "x",
        "REASSIGND_CONFIG": "f",
        "PATH": "/bin",
    }
    assert load_config(None, env).ignored_env == ("REASSIGND_API_TOKN",)


def test_every_problem_is_reported_at_once_with_key_and_value(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        cluster.bootstrap.servers = ["no-port", "ok:9092"]
        reassignment.parallel.replica.count = 0
        controller.cycle.interval.seconds = "fast"
        api.listen = "localhost"
        log.level = "loud"
        mqtt.port = 70000
        reassignment.paralel.partition.count = 3
        """,
    )
    found = problems_of(path, {"REASSIGND_HA_ENABLE": "maybe"})
    by_key = {key: message for _, key, message in found}
    assert len(found) == 8
    assert "'no-port'" in by_key["cluster.bootstrap.servers"]
    assert "0" in by_key["reassignment.parallel.replica.count"]
    assert "'fast'" in by_key["controller.cycle.interval.seconds"]
    assert "'localhost'" in by_key["api.listen"]
    assert "'loud'" in by_key["log.level"]
    assert "70000" in by_key["mqtt.port"]
    assert (
        "did you mean reassignment.parallel.partition.count" in by_key["reassignment.paralel.partition.count"]
    )
    assert "'maybe'" in by_key["ha.enable"]
    wheres = {key: where for where, key, _ in found}
    assert wheres["ha.enable"] == "environment REASSIGND_HA_ENABLE"
    assert wheres["log.level"] == str(path)


def test_required_key_missing(tmp_path: Path) -> None:
    found = problems_of(write(tmp_path, "log.level = 'info'\n"))
    assert [(k, m) for _, k, m in found] == [
        ("cluster.bootstrap.servers", "is required (or set REASSIGND_CLUSTER_BOOTSTRAP_SERVERS)")
    ]


def test_toml_syntax_and_missing_file(tmp_path: Path) -> None:
    assert problems_of(write(tmp_path, "a = = 1\n"))[0][1] == "(TOML)"
    assert problems_of(tmp_path / "absent.toml")[0][1:] == ("(file)", "No such file or directory")


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ('state.store = "zookeeper"', "state.store", "needs ha.zookeeper.connect"),
        ("ha.enable = true", "ha.enable", "needs ha.zookeeper.connect"),
        ('ha.enable = true\nha.zookeeper.connect = "zk:2181"', "ha.enable", "state.store = 'zookeeper'"),
        (
            "controller.cycle.interval.seconds = 1.0\ncontroller.cycle.min.interval.seconds = 2.0",
            "controller.cycle.min.interval.seconds",
            "exceeds controller.cycle.interval.seconds",
        ),
        (
            "auto.throttle.enable = true\nauto.throttle.max.bytes.per.second = 1000\n"
            "auto.throttle.step.bytes.per.second = 100\nfollower.reassignment.throttled.rate = 5000",
            "auto.throttle.max.bytes.per.second",
            "below follower.reassignment.throttled.rate = 5000",
        ),
        ('cluster.security.protocol = "SASL_SSL"', "cluster.sasl.mechanism", "is required"),
        (
            'cluster.security.protocol = "SASL_SSL"\ncluster.sasl.mechanism = "PLAIN"\n'
            'cluster.sasl.username = "u"',
            "cluster.sasl.password",
            "is required with cluster.sasl.mechanism = PLAIN",
        ),
        ('cluster.sasl.username = "u"', "cluster.sasl.username", "has no effect"),
        (
            'cluster.security.protocol = "SSL"\ncluster.ssl.ca.location = "/nonexistent/ca.pem"',
            "cluster.ssl.ca.location",
            "'/nonexistent/ca.pem' is not a readable file",
        ),
        ('mqtt.tls.ca.file = "/x"', "mqtt.tls.ca.file", "has no effect with mqtt.tls.enable = false"),
        ('mqtt.password = "p"', "mqtt.password", "mqtt.username is not"),
        (
            '[cluster.client]\n"sasl.password" = "p"',
            "cluster.client.sasl.password",
            "use cluster.sasl.password instead",
        ),
        (
            'cluster.client."bootstrap.servers" = "x:1"',
            "cluster.client.bootstrap.servers",
            "use cluster.bootstrap",
        ),
    ],
)
def test_cross_field_checks(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    found = problems_of(write(tmp_path, BASE + text + "\n"))
    assert any(k == key and fragment in m for _, k, m in found), found


def test_secrets_from_file_env_and_value(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  s3cret-token-0123456789abcdef0123\n")
    token_file.chmod(0o600)
    path = write(tmp_path, BASE + f'api.token.file = "{token_file}"\nmqtt.username = "m"\n')
    config = load_config(path, {"REASSIGND_MQTT_PASSWORD": "mqtt-pass"})
    assert isinstance(config["api.token"], Secret)
    assert config.secret("api.token") == "s3cret-token-0123456789abcdef0123"
    assert config.secret("mqtt.password") == "mqtt-pass"
    assert config.secret("mqtt.command.hmac.secret") is None
    dump = repr(config) + str(config.redacted()) + str(dict(config))
    assert "s3cret-token" not in dump and "mqtt-pass" not in dump
    assert config.redacted()["api.token"] == "***"


def test_secret_problems(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    empty.chmod(0o600)
    path = write(tmp_path, BASE + f'api.token.file = "{empty}"\nmqtt.password.file = "{tmp_path}/none"\n')
    found = {k: m for _, k, m in problems_of(path, {"REASSIGND_MQTT_PASSWORD": "also"})}
    assert "is empty" in found["api.token.file"]
    assert "set both mqtt.password and mqtt.password.file" in found["mqtt.password"]


def test_client_settings_for_the_cluster_adapter(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("pem")
    path = write(
        tmp_path,
        BASE
        + f"""
        cluster.security.protocol = "SASL_SSL"
        cluster.ssl.ca.location = "{ca}"
        cluster.sasl.mechanism = "SCRAM-SHA-256"
        cluster.sasl.username = "svc"
        [cluster.client]
        "socket.keepalive.enable" = true
        "sasl.oauthbearer.client.secret" = "hidden"
        """,
    )
    config = load_config(path, {"REASSIGND_CLUSTER_SASL_PASSWORD": "pw"})
    assert config.client_settings() == {
        "bootstrap.servers": "k1:9092,k2:9092",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(ca),
        "ssl.endpoint.identification.algorithm": "https",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "svc",
        "sasl.password": "pw",
        "socket.keepalive.enable": "true",
        "sasl.oauthbearer.client.secret": "hidden",
    }
    redacted = config.redacted()
    assert redacted["cluster.client.sasl.oauthbearer.client.secret"] == "***"
    assert redacted["cluster.client.socket.keepalive.enable"] == "true"
    assert redacted["cluster.sasl.password"] == "***"


def test_config_is_immutable(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, BASE))
    with pytest.raises(AttributeError):
        config._values = {}
    with pytest.raises(TypeError):
        config["log.level"] = "debug"  # type: ignore[index]


@given(st.integers(min_value=1, max_value=2**31 - 1), st.integers(min_value=1, max_value=2**31 - 1))
def test_movement_limits_are_independent_upper_bounds(per_broker: int, total: int) -> None:
    """KIP-435: each limit is an upper bound of its own ([1, Int.MAX]); no ordering between them."""
    env = {
        "REASSIGND_CLUSTER_BOOTSTRAP_SERVERS": "k:9092",
        "REASSIGND_REASSIGNMENT_MAX_INCOMING_REPLICA_MOVEMENTS_PER_BROKER": str(per_broker),
        "REASSIGND_REASSIGNMENT_MAX_OUTGOING_REPLICA_MOVEMENTS_PER_BROKER": "1",
        "REASSIGND_REASSIGNMENT_MAX_CONCURRENT_REPLICA_MOVEMENTS": str(total),
    }
    limits = load_config(None, env).limits()
    assert (limits.max_incoming_per_broker, limits.max_concurrent_replica_movements) == (per_broker, total)


def test_self_healing_keys_make_its_settings(tmp_path: Path) -> None:
    """Every detector named in `self.healing.detectors`, with its keys, reaches the daemon's settings; a
    detector name it does not know is refused naming the ones it does."""
    from reassignd.daemon.app import healing_settings_from
    from reassignd.engine.anomalies import AnomalyKind

    text = BASE + textwrap.dedent(
        """
        self.healing.detectors = [
            "rack_spread", "replica_balance", "leader_balance", "byte_balance", "disk_capacity",
            "under_replicated", "log_dir_offline"
        ]
        self.healing.log.dir.failure.seconds = 45
        self.healing.anomaly.retention.seconds = 86400
        self.healing.violation.seconds = 120
        self.healing.under.replicated.seconds = 90
        self.healing.balance.threshold = 0.2
        self.healing.byte.balance.threshold = 0.3
        self.healing.disk.capacity.threshold = 0.75
        """
    )
    settings = healing_settings_from(load_config(write(tmp_path, text)))
    assert settings.detectors == frozenset(AnomalyKind) - {AnomalyKind.BROKER_FAILURE, AnomalyKind.NEW_BROKER}
    assert (settings.violation_seconds, settings.under_replicated_seconds) == (120.0, 90.0)
    assert (settings.balance_threshold, settings.byte_balance_threshold) == (0.2, 0.3)
    assert settings.disk_capacity_threshold == 0.75
    assert (settings.log_dir_failure_seconds, settings.anomaly_retention_seconds) == (45.0, 86400.0)
    bad = write(tmp_path, BASE + 'self.healing.detectors = ["disk_failure"]\n', "bad.toml")
    (problem,) = problems_of(bad)
    assert "rack_spread" in problem[2] and "disk_failure" in problem[2]
    for key in ("self.healing.log.dir.failure.seconds", "self.healing.anomaly.retention.seconds"):
        (problem,) = problems_of(write(tmp_path, BASE + f"{key} = -5\n", "bad.toml"))
        assert problem[1] == key and "-5" in problem[2], problem
