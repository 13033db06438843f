"""The Dockerfile read as instructions (no Docker engine runs here): pinned, non-root, reproducible, and a
health check that really works against a running daemon."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.deploy.conftest import REPO, LiveScrape
from tests.services.procs import free_port

DOCKERFILE = REPO / "Dockerfile"
CONSTRAINTS = REPO / "deploy/docker/constraints.txt"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        if line.lstrip().startswith("#") and not pending:
            continue
        if line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full:
            keyword, _, rest = full.partition(" ")
            result.append((keyword.upper(), rest.strip()))
    return result


def stages() -> dict[str, list[tuple[str, str]]]:
    result: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for keyword, rest in instructions():
        if keyword == "FROM":
            name = rest.split(" AS ")[1].strip()
            current = result.setdefault(name, [])
        current.append((keyword, rest))
    return result


def build_args() -> dict[str, str]:
    return dict(rest.split("=", 1) for keyword, rest in instructions() if keyword == "ARG" and "=" in rest)


def test_base_images_are_pinned_to_exact_versions() -> None:
    args = build_args()
    assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+", args["PYTHON_IMAGE"]), args["PYTHON_IMAGE"]
    assert re.fullmatch(r"eclipse-temurin:17\.\d+\.\d+_\d+-jre-[a-z]+", args["JRE_IMAGE"]), args["JRE_IMAGE"]
    for rest in (rest for keyword, rest in instructions() if keyword == "FROM"):
        image = rest.split(" AS ")[0].strip()
        assert image in ("${PYTHON_IMAGE}", "${JRE_IMAGE}"), f"unpinned base image {image}"


def test_the_daemon_and_pipeline_targets_run_as_a_non_root_user() -> None:
    for target in ("daemon", "pipeline"):
        users = [rest for keyword, rest in stages()[target] if keyword == "USER"]
        assert users and users[-1].split(":")[0] not in ("root", "0"), target


def test_the_daemon_image_has_no_java_and_no_pipeline_extras() -> None:
    daemon = " ".join(rest for _, rest in stages()["daemon"] + stages()["daemon-deps"])
    assert "java" not in daemon.lower() and "[pipeline]" not in daemon
    pipeline = " ".join(rest for _, rest in stages()["pipeline"] + stages()["pipeline-deps"])
    assert "[pipeline]" in pipeline and "--from=jre /opt/java/openjdk" in pipeline
    assert "JAVA_HOME=/opt/java/openjdk" in pipeline


def test_installs_are_pinned_uncached_and_from_the_registry_only() -> None:
    for stage, body in stages().items():
        for keyword, rest in body:
            if keyword == "ADD":
                pytest.fail(f"{stage}: ADD may fetch URLs; use COPY")
            if keyword != "RUN":
                continue
            assert not re.search(r"\b(curl|wget|git clone)\b|https?://", rest), (
                f"{stage}: network fetch: {rest}"
            )
            for install in re.findall(r"pip install[^&]*", rest):
                assert "--no-cache-dir" in install, f"{stage}: {install}"
                assert "-c " in install and "constraints.txt" in install, f"{stage}: unconstrained {install}"


def _pins() -> dict[str, str]:
    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and re.fullmatch(r"[\w.]+", version), f"not an exact pin: {line}"
            pins[_canonical(name)] = version
    return pins


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_pyproject_asks_for_compatible_ranges_and_the_constraints_pin_them() -> None:
    """A library that pins exact versions forces them on everything installed beside it: pyproject.toml
    says what reassignd works with (a floor and a ceiling), the constraints file what the image, CI and
    `make setup` install, exactly. Every pin lies in its range."""
    from packaging.requirements import Requirement

    pins = _pins()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"].values()
    wanted = [*project["dependencies"], *(r for extra in extras for r in extra)]
    for text in wanted:
        requirement = Requirement(text)
        operators = {spec.operator for spec in requirement.specifier}
        assert "==" not in operators and "===" not in operators, f"exact pin in pyproject.toml: {text}"
        assert ">=" in operators or "~=" in operators, f"no floor: {text}"
        pinned = pins.get(_canonical(requirement.name))
        assert pinned is not None, f"{requirement.name} is not pinned in {CONSTRAINTS.name}"
        assert requirement.specifier.contains(pinned, prereleases=True), f"{text} vs pin {pinned}"
    build = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    assert {"setuptools", "wheel"} <= set(pins) and len(build) == 2


def test_make_setup_installs_with_the_constraints() -> None:
    setup = (REPO / "scripts/setup.sh").read_text()
    install = next(line for line in setup.splitlines() if "pip install" in line and "-e " in line)
    assert "-c deploy/docker/constraints.txt" in install, install
    assert "constraints.txt" in setup.split("want=", 1)[1].split("\n", 1)[0], "a new pin reinstalls"


def test_the_build_context_holds_what_the_copies_need() -> None:
    patterns = [
        line
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]

    def included(path: str) -> bool:
        keep = True
        for pattern in patterns:
            negated = pattern.startswith("!")
            body = pattern[1:].rstrip("/") if negated else pattern.rstrip("/")
            if fnmatch.fnmatch(path, body) or path.startswith(body + "/"):
                keep = negated
        return keep

    for keyword, rest in instructions():
        if keyword != "COPY" or rest.startswith("--from"):
            continue
        for source in rest.split()[:-1]:
            assert (REPO / source).exists(), source
            assert included(source), f"{source} is excluded by .dockerignore"
    assert not included(".venv") and not included("tests")


def healthcheck_command() -> list[str]:
    (rest,) = [rest for keyword, rest in instructions() if keyword == "HEALTHCHECK"]
    command = json.loads(rest[rest.index("CMD") + 3 :].strip())
    assert command[0] == "python" and "urllib.request" in command[2]
    return [sys.executable, *command[1:]]


def test_the_healthcheck_passes_against_a_live_daemon_and_fails_without_one(live: LiveScrape) -> None:
    env_line = next(
        rest for keyword, rest in stages()["daemon"] if keyword == "ENV" and "HEALTHCHECK_URL" in rest
    )
    default_url = re.search(r"HEALTHCHECK_URL=(\S+)", env_line)
    assert default_url and default_url.group(1) == "http://127.0.0.1:8080/healthz"
    command = healthcheck_command()
    healthy = subprocess.run(
        command, env={**os.environ, "HEALTHCHECK_URL": live.daemon.url + "/healthz"}, timeout=30, check=False
    )
    assert healthy.returncode == 0
    closed = f"http://127.0.0.1:{free_port()}/healthz"
    down = subprocess.run(
        command, env={**os.environ, "HEALTHCHECK_URL": closed}, capture_output=True, timeout=30, check=False
    )
    assert down.returncode != 0


def test_the_image_runs_the_daemon_on_the_mounted_config() -> None:
    daemon = dict(stages()["daemon"])
    assert json.loads(daemon["ENTRYPOINT"]) == ["reassignd"]
    assert json.loads(daemon["CMD"]) == ["run", "--config", "/etc/reassignd/reassignd.toml"]
    assert daemon["EXPOSE"] == "8080" and '"/var/lib/reassignd"' in daemon["VOLUME"]


def test_the_openapi_document_ships_inside_the_package() -> None:
    """The installed daemon reads its OpenAPI document as package data: the image copies nothing extra."""
    from reassignd.daemon import api

    package = Path(api.__file__).resolve().parents[1]
    assert Path(api.OPENAPI_PATH).resolve().is_relative_to(package)
    assert not [rest for keyword, rest in instructions() if keyword == "COPY" and "openapi.json" in rest]
