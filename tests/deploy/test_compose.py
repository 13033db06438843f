"""docker-compose.yml read as data: the services the issue asks for, wired to each other and to files that
exist. No Docker engine runs here, so these checks are what stands between the file and `compose up`."""

from __future__ import annotations

import base64
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reassignd.config import load_config
from tests.deploy import yaml_files
from tests.deploy.conftest import REPO
from tests.services.procs import free_port, port_open, stop_pid, wait_until

COMPOSE_CONFIG = REPO / "config/compose.toml"
DAEMONS = ("reassignd-a", "reassignd-b")
BROKERS = ("kafka1", "kafka2", "kafka3")
SECRETS_DIR = "/run/reassignd-secrets"


def compose() -> dict[str, Any]:
    return dict(yaml_files.load("docker-compose.yml"))


def services() -> dict[str, dict[str, Any]]:
    return dict(compose()["services"])


def env(service: str) -> dict[str, str]:
    return {k: str(v) for k, v in (services()[service].get("environment") or {}).items()}


def daemon_config(service: str, tmp_path: Path) -> Any:
    """compose.toml with the service's environment, its secret files stood in for by temporary files."""
    environment = {}
    for key, value in env(service).items():
        environment[key] = value
        if value.startswith(SECRETS_DIR + "/"):
            stand_in = tmp_path / Path(value).name
            stand_in.write_text("stand-in-secret-0123456789abcdef0123456789\n")
            stand_in.chmod(0o400)  # as deploy/docker/write-secrets.py leaves it
            environment[key] = str(stand_in)
    return load_config(COMPOSE_CONFIG, environment)


def test_the_stack_has_every_service_the_issue_asks_for() -> None:
    assert set(services()) == {
        *BROKERS,
        "create-topics",
        "zookeeper",
        "mosquitto",
        "prometheus",
        "grafana",
        *DAEMONS,
        "secrets",
    }
    for one_shot in ("create-topics", "secrets"):
        assert services()[one_shot]["restart"] == "no"


def test_every_image_is_pinned() -> None:
    for name, service in services().items():
        image = service["image"]
        repository, _, tag = image.rpartition(":")
        assert repository and "/" not in tag, f"{name}: {image} has no tag"
        assert tag != "latest" and re.search(r"\d+\.\d+", tag), f"{name}: {image} is not pinned to a version"
    assert {services()[b]["image"] for b in BROKERS} == {services()["create-topics"]["image"]}
    assert services()["kafka1"]["image"].startswith("apache/kafka:")


def test_kafka_is_a_three_node_kraft_quorum_with_multi_level_racks() -> None:
    brokers = {name: env(name) for name in BROKERS}
    voters = {f"{b['KAFKA_NODE_ID']}@{name}:9093" for name, b in brokers.items()}
    racks = set()
    for name, broker in brokers.items():
        assert set(broker["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}, name
        assert set(broker["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")) == voters, name
        assert re.fullmatch(r"(/[A-Za-z0-9_-]+){2,}", broker["KAFKA_BROKER_RACK"]), name
        racks.add(broker["KAFKA_BROKER_RACK"])
        assert f"PLAINTEXT://{name}:9092" in broker["KAFKA_ADVERTISED_LISTENERS"].split(","), name
        host_port = re.search(r"HOST://localhost:(\d+)", broker["KAFKA_ADVERTISED_LISTENERS"])
        assert (
            host_port and f"127.0.0.1:{host_port.group(1)}:{host_port.group(1)}" in services()[name]["ports"]
        )
    assert len(racks) == 3
    assert len({b["KAFKA_NODE_ID"] for b in brokers.values()}) == 3
    cluster_ids = {b["CLUSTER_ID"] for b in brokers.values()}
    assert len(cluster_ids) == 1
    (cluster_id,) = cluster_ids
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16, "a KRaft cluster id is a base64 UUID"


def test_every_mounted_file_exists_and_named_volumes_are_declared() -> None:
    declared = set(compose()["volumes"])
    for name, service in services().items():
        for volume in service.get("volumes", []):
            source, target = volume.split(":")[:2]
            if source.startswith("."):
                assert (REPO / source).is_file(), f"{name}: {source} does not exist"
            else:
                assert source in declared, f"{name}: volume {source} not declared"
            assert target.startswith("/"), f"{name}: {volume}"
        build = service.get("build")
        if build:
            dockerfile = REPO / build["context"] / build.get("dockerfile", "Dockerfile")
            assert re.search(rf"^FROM .* AS {build['target']}$", dockerfile.read_text(), re.MULTILINE)
        for dependency in service.get("depends_on", {}):
            assert dependency in services(), f"{name} depends on unknown {dependency}"


def test_the_daemons_run_the_built_image_with_the_compose_config() -> None:
    built = services()["secrets"]["image"]
    dockerfile = (REPO / "Dockerfile").read_text()
    for name in DAEMONS:
        service = services()[name]
        assert service["image"] == built
        assert "./config/compose.toml:/etc/reassignd/reassignd.toml:ro" in service["volumes"]
        assert '"/etc/reassignd/reassignd.toml"' in dockerfile  # the image's CMD reads the mounted file
        ports = service["ports"]
        assert len(ports) == 1 and ports[0].startswith("127.0.0.1:") and ports[0].endswith(":8080")


def test_compose_config_passes_validate_config() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "reassignd", "validate-config", "--no-env", str(COMPOSE_CONFIG)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("service", DAEMONS)
def test_each_daemon_is_an_ha_member_wired_to_the_stack(service: str, tmp_path: Path) -> None:
    config = daemon_config(service, tmp_path)
    assert not config.ignored_env
    assert config["state.store"] == "zookeeper" and config["ha.enable"] is True
    assert config["ha.node.id"] == service
    assert config["ha.advertised.url"] == f"http://{service}:8080"
    assert config["ha.zookeeper.connect"].split(":")[0] in services()
    assert list(config["cluster.bootstrap.servers"]) == [f"{b}:9092" for b in BROKERS]
    assert config["mqtt.enable"] is True and config["mqtt.host"] in services()
    assert config["api.listen"] == "0.0.0.0:8080"
    assert config.secret("api.token") and config.secret("mqtt.command.hmac.secret")
    mounts = services()[service]["volumes"]
    assert f"secrets:{SECRETS_DIR}:ro" in mounts


def test_prometheus_scrapes_both_daemons_and_loads_the_rules(tmp_path: Path) -> None:
    prometheus = yaml_files.load("deploy/prometheus/prometheus.yml")
    (job,) = [j for j in prometheus["scrape_configs"] if j["job_name"] == "reassignd"]
    targets = {t for group in job["static_configs"] for t in group["targets"]}
    assert targets == {f"{name}:8080" for name in DAEMONS}
    assert not any("cluster" in group.get("labels", {}) for group in job["static_configs"]), (
        "the daemons label their series with cluster.id; a target label would rename theirs"
    )
    assert daemon_config(DAEMONS[0], tmp_path)["cluster.id"], "the label the alerts and dashboard group by"
    mounts = services()["prometheus"]["volumes"]
    for rule_file in prometheus["rule_files"]:
        target = rule_file if rule_file.startswith("/") else f"/etc/prometheus/{rule_file}"
        assert any(m.split(":")[1] == target for m in mounts), rule_file
    assert "--config.file=/etc/prometheus/prometheus.yml" in services()["prometheus"]["command"]


def test_grafana_is_provisioned_with_the_dashboard_and_the_data_source() -> None:
    grafana = services()["grafana"]
    targets = {m.split(":")[1]: m.split(":")[0] for m in grafana["volumes"]}
    provider = yaml_files.load("deploy/grafana/provisioning/dashboards/reassignd.yml")["providers"][0]
    assert targets[provider["options"]["path"] + "/reassignd.json"] == "./deploy/grafana/reassignd.json"
    assert targets["/etc/grafana/provisioning/datasources/prometheus.yml"].endswith(
        "datasources/prometheus.yml"
    )
    assert env("grafana")["GF_SECURITY_ADMIN_PASSWORD__FILE"].startswith(SECRETS_DIR + "/")


def test_the_secrets_job_writes_every_secret_the_stack_reads_once(tmp_path: Path) -> None:
    wanted = {
        Path(value).name
        for name in (*DAEMONS, "grafana")
        for value in env(name).values()
        if value.startswith(SECRETS_DIR + "/")
    }
    script = REPO / "deploy/docker/write-secrets.py"
    assert (
        f"./deploy/docker/write-secrets.py:{services()['secrets']['entrypoint'][1]}:ro"
        in (services()["secrets"]["volumes"])
    )
    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True, capture_output=True, timeout=60)
    written = {path.name: path.read_text() for path in tmp_path.iterdir()}
    assert wanted <= set(written), sorted(wanted - set(written))
    assert len(set(written.values())) == len(written), "each secret is drawn separately"
    assert all(len(value.strip()) >= 40 for value in written.values())
    assert all(stat.S_IMODE(path.stat().st_mode) & 0o222 == 0 for path in tmp_path.iterdir())
    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True, capture_output=True, timeout=60)
    assert {path.name: path.read_text() for path in tmp_path.iterdir()} == written, "kept on restart"


def test_the_topic_job_is_valid_bash_placing_replicas_on_existing_brokers() -> None:
    script = REPO / "deploy/kafka/create-topics.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    ids = {int(env(b)["KAFKA_NODE_ID"]) for b in BROKERS}
    assignments = re.findall(r'^if create \S+ "([\d:,]+)"', script.read_text(), re.MULTILINE)
    assert len(assignments) == 3
    for assignment in assignments:
        for partition in assignment.split(","):
            replicas = [int(r) for r in partition.split(":")]
            assert set(replicas) <= ids and len(set(replicas)) == len(replicas), partition
    entrypoint = services()["create-topics"]["entrypoint"]
    assert f"./deploy/kafka/create-topics.sh:{entrypoint[1]}:ro" in services()["create-topics"]["volumes"]


@pytest.mark.mosquitto
def test_mosquitto_accepts_the_stack_config(tmp_path: Path) -> None:
    """The real broker loads our config (port and data directory moved to this machine's free ones)."""
    port = free_port()
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)  # mosquitto started as root drops to its own user
    text = (REPO / "deploy/mosquitto/mosquitto.conf").read_text()
    assert "listener 1883 0.0.0.0" in text and "persistence_location /mosquitto/data/" in text
    text = text.replace("listener 1883 0.0.0.0", f"listener {port} 127.0.0.1")
    text = text.replace("persistence_location /mosquitto/data/", f"persistence_location {data}/")
    config = tmp_path / "mosquitto.conf"
    config.write_text(text)
    with (tmp_path / "mosquitto.log").open("wb") as log:
        proc = subprocess.Popen(
            ["/usr/sbin/mosquitto", "-c", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
    try:
        wait_until(lambda: port_open(port), 15, "Mosquitto", proc)
    finally:
        stop_pid(proc)
