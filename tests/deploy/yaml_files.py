"""The deployment's YAML files, read with the subset loader; PyYAML's reading of them when it is present."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.deploy import yaml_subset

REPO = Path(__file__).resolve().parents[2]
YAML_FILES = (
    "docker-compose.yml",
    "deploy/prometheus/prometheus.yml",
    "deploy/prometheus/alerts.yml",
    "deploy/grafana/provisioning/datasources/prometheus.yml",
    "deploy/grafana/provisioning/dashboards/reassignd.yml",
)
_DUMP = "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1], encoding='utf-8'))))"


def load(relative: str) -> Any:
    return yaml_subset.load((REPO / relative).read_text(encoding="utf-8"))


def pyyaml_reader() -> list[str] | None:
    """A command that prints a YAML file as JSON with PyYAML: this interpreter's, or the system python3's
    (PyYAML is not a dependency of the project; Debian ships it as python3-yaml). None when neither has it."""
    candidates = [sys.executable]
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system:
        candidates.append(system)
    for python in candidates:
        probe = subprocess.run([python, "-c", "import yaml"], capture_output=True, check=False)
        if probe.returncode == 0:
            return [python, "-c", _DUMP]
    return None


def load_with_pyyaml(command: list[str], relative: str) -> Any:
    result = subprocess.run(
        [*command, str(REPO / relative)], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(result.stdout)
