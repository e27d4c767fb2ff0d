"""tuitrain installed as users install it: from a wheel, not editable, into an environment of its own.

An editable install reads every file from the checkout, so a file the wheel forgets (the app's
stylesheets were) is found in tests and missing for users. Here the wheel is built from a copy of
the package's files, installed into a fresh venv with `--no-deps` (its dependencies come from this
venv's site-packages through a .pth, so nothing is downloaded and tuitrain itself is the wheel's
alone), and then the app opens to its first frame and the demo trains, both from another folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import FAST

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "tuitrain"


def package_files() -> set[str]:
    """Every file of the package in the checkout, as a wheel names it (tuitrain/...), less bytecode."""
    return {path.relative_to(REPO).as_posix() for path in PACKAGE.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel` builds from a copy of the sources (a build in the checkout would leave build/ there)."""
    source = tmp_path_factory.mktemp("source")
    shutil.copy2(REPO / "pyproject.toml", source)
    shutil.copy2(REPO / "README.md", source)
    shutil.copytree(PACKAGE, source / "tuitrain", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "--disable-pip-version-check", "-q", "-w", str(dist), str(source)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = dist.glob("tuitrain-*.whl")
    return found


def test_the_wheel_holds_every_file_of_the_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    missing = sorted(package_files() - shipped)
    assert not missing, f"files of tuitrain/ that the wheel does not ship (add them to package-data): {missing}"


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel (not editable); returns its bin/ folder."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    # The dependencies (torch, textual, ...) from this venv: a plain path entry, so the .pth files there
    # (this checkout's editable hook among them) are not run and `import tuitrain` finds the wheel's copy.
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                           "--disable-pip-version-check", "-q", str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv / "bin"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything that would point Python at the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "HF_HUB_OFFLINE": "1", **extra}


def test_the_installed_package_is_the_wheels(installed: Path, tmp_path: Path) -> None:
    where = subprocess.run([str(installed / "python"), "-c", "import tuitrain; print(tuitrain.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed.parent), where.stdout


FIRST_FRAME = """
import asyncio, sys
from pathlib import Path
from tuitrain.tui.app import TuitrainApp

async def main():
    app = TuitrainApp(Path(sys.argv[1]))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(600):  # up to a minute for Home's first frame on a busy machine
            await pilot.pause(0.1)
            if type(app.screen).__name__ == "HomeScreen":
                print("first frame:", type(app.screen).__name__)
                return
    sys.exit("Home never showed")

asyncio.run(main())
"""


@pytest.mark.slow
def test_the_app_opens_to_its_first_frame_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    opened = subprocess.run([str(installed / "python"), "-c", FIRST_FRAME, str(runs)], capture_output=True, text=True,
                            cwd=tmp_path, env=clean_env(TUITRAIN_RUNS_DIR=str(runs)), timeout=300)
    assert opened.returncode == 0 and "first frame: HomeScreen" in opened.stdout, opened.stdout + opened.stderr
    assert "Traceback" not in opened.stderr, opened.stderr


@pytest.mark.slow
def test_the_demo_trains_from_the_wheel_in_another_folder(installed: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs = tmp_path / "runs"
    done = subprocess.run([str(installed / "tuitrain"), "run", "demo", *FAST], capture_output=True, text=True,
                          cwd=elsewhere, env=clean_env(TUITRAIN_RUNS_DIR=str(runs)), timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "finished" in done.stdout + done.stderr
    (run_dir,) = runs.iterdir()
    assert any(run_dir.rglob("checkpoint-8")), sorted(p.name for p in run_dir.rglob("*"))
