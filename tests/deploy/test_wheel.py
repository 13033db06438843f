"""The wheel as a user installs it: built from this tree, installed into a fresh venv in a temp dir, and run
from a directory that is not a clone. `reassignd demo` from a wheel install failed: examples/ missing."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("reassignd-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with only the wheel installed in it; its dependencies are this interpreter's (no
    network here), put after the venv's own site-packages, so `import reassignd` is the wheel's copy."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    site = Path(
        subprocess.run(
            [str(root / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    with zipfile.ZipFile(wheel) as archive:  # what pip install does for a pure wheel, without pip
        archive.extractall(site)
    script = root / "bin/reassignd"
    script.write_text(
        f"#!{root / 'bin/python'}\nimport sys\nfrom reassignd.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    yield root


def run(venv: Path, cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(venv / "bin/reassignd"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_wheel_ships_the_scenarios_and_the_example_config(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for shipped in (
        "demo.json",
        "guide.json",
        "small.json",
        "medium.json",
        "multi-dc.json",
        "reassignd.toml",
    ):
        assert f"reassignd/examples/{shipped}" in names, shipped


def test_the_installed_copy_is_the_wheels(venv: Path, tmp_path: Path) -> None:
    where = subprocess.run(
        [str(venv / "bin/python"), "-c", "import reassignd; print(reassignd.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(venv)), where


def test_demo_and_the_guide_run_from_a_wheel_install(venv: Path, tmp_path: Path) -> None:
    result = run(venv, tmp_path, "demo", "--seconds", "10", timeout=400)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "completed" in result.stdout
    example = run(venv, tmp_path, "examples", "reassignd.toml")
    assert example.returncode == 0 and "cluster.bootstrap.servers" in example.stdout
    listed = run(venv, tmp_path, "examples")
    assert {"demo.json", "guide.json", "reassignd.toml"} <= set(listed.stdout.split())
    check = run(venv, tmp_path, "sim", "--scenario", "guide", "--help")
    assert check.returncode == 0
