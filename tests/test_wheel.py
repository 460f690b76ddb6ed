"""The wheel users get (`pip install .`): `python -m build` makes the sdist and, from the sdist, the wheel; twine
checks both; the wheel holds every file under src/mhaudit that git tracks (the modules and the package data:
lexicons, prompts, templates, word lists, mappings, the annotation app's static files); and installed, not
editable, into a fresh venv it answers `mhaudit --version` and runs a small audit from that venv's site-packages.

Offline: the build uses this venv's setuptools (`--no-isolation`), pip installs the wheel alone (`--no-deps
--no-index`), and the fresh venv finds the dependencies in this venv's site-packages through a .pth file, which
puts that folder on its path after its own and, being a plain path line, leaves out this venv's editable
install of src/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mhaudit

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300  # seconds per step: a bound for a busy machine, not a measure (the steps take a few seconds idle)


def _run(args: list, **kwargs) -> subprocess.CompletedProcess:
    run = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=TIMEOUT, **kwargs)
    assert run.returncode == 0, f"{args} exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run


@pytest.fixture(scope="module")
def sdist_and_wheel(tmp_path_factory) -> tuple[Path, Path]:
    """`python -m build` of the working tree, as `pip install .` sees it: the sdist, then the wheel built from it."""
    dist = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, ROOT])
    (sdist,), (wheel,) = list(dist.glob("*.tar.gz")), list(dist.glob("*.whl"))
    return sdist, wheel


@pytest.fixture(scope="module")
def wheel_venv(sdist_and_wheel, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel installed, not editable: (its folder, the environment to run it in)."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    # this venv's pip installs into the fresh one, before the .pth below shows it the editable mhaudit
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", sdist_and_wheel[1]])
    own = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    dependencies = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (own / "dev-venv-dependencies.pth").write_text("".join(f"{folder}\n" for folder in sorted(dependencies)))
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return venv, env


def _tracked_files() -> list[str]:
    """The files under src/mhaudit that git tracks (and that are on disk), relative to src/."""
    listed = _run(["git", "ls-files", "-z", "src/mhaudit"], cwd=ROOT).stdout.split("\0")
    return sorted(path.removeprefix("src/") for path in listed if path and (ROOT / path).is_file())


def test_twine_checks_the_sdist_and_the_wheel(sdist_and_wheel):
    run = _run([sys.executable, "-m", "twine", "check", "--strict", *sdist_and_wheel])
    assert run.stdout.count("PASSED") == 2, run.stdout


def test_the_wheel_holds_every_file_git_tracks_under_src(sdist_and_wheel):
    sdist, wheel = sdist_and_wheel
    tracked = _tracked_files()
    data = [path for path in tracked if not path.endswith(".py")]
    # the kinds of package data there are: a listing that lost them (not a checkout, a moved folder) fails here
    for expected in (
        "mhaudit/weak_supervision/lexicons/recall.toml",
        "mhaudit/weak_supervision/labelers/prompts/mh.toml",
        "mhaudit/weak_supervision/annotate/templates/item.html",
        "mhaudit/weak_supervision/annotate/static/app.js",
        "mhaudit/weak_supervision/annotate/static/app.css",
        "mhaudit/weak_supervision/annotate/guidelines/binary.md",
        "mhaudit/features/word_lists/negation.txt",
        "mhaudit/tables/corpus/mappings/kaggle-cpfe.toml",
        "mhaudit/synthetic/simulate_data/neutral.txt",
        "mhaudit/attribution/proxy_clinical.txt",
    ):
        assert expected in data, f"{expected} is not tracked by git under src/"
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert not [path for path in tracked if path not in in_wheel], "tracked files missing from the wheel"
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        in_sdist = {name.removeprefix(f"{top}/src/") for name in archive.getnames()}
    assert not [path for path in tracked if path not in in_sdist], "tracked files missing from the sdist"
    metadata = zipfile.ZipFile(wheel).read(f"mhaudit-{mhaudit.__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {mhaudit.__version__}\n" in metadata


def test_the_installed_wheel_is_imported_from_its_venv_not_from_src(wheel_venv, tmp_path):
    venv, env = wheel_venv
    where = _run(
        [venv / "bin" / "python", "-c", "import mhaudit.cli, sys; print(mhaudit.cli.__file__, sys.prefix)"],
        cwd=tmp_path,
        env=env,
    ).stdout.split()
    assert Path(where[0]).is_relative_to(venv / "lib") and Path(where[1]) == venv, where
    assert not Path(where[0]).is_relative_to(ROOT), where


def test_mhaudit_version_from_the_installed_wheel(wheel_venv, tmp_path):
    venv, env = wheel_venv
    for command in ([venv / "bin" / "mhaudit", "--version"], [venv / "bin" / "python", "-m", "mhaudit", "--version"]):
        assert _run(command, cwd=tmp_path, env=env).stdout.strip() == f"mhaudit {mhaudit.__version__}"


def test_the_installed_wheel_runs_a_small_audit(wheel_venv, tmp_path):
    """`mhaudit audit cpfe` on two published-style prediction files (a label and prob_ columns, no ids)."""
    venv, env = wheel_venv
    rng = np.random.default_rng(0)
    for platform, noise in (("reddit", 1.0), ("twitter", 2.0)):
        label = rng.integers(0, 2, 300)
        depression = 1 / (1 + np.exp(-(2 * label - 1 + rng.normal(0, noise, 300))))
        pd.DataFrame({"label": label, "prob_normal": 1 - depression, "prob_depression": depression}).to_csv(
            tmp_path / f"tfidf_{platform}.csv", index=False
        )
    run = _run(
        [
            venv / "bin" / "mhaudit",
            "audit",
            "cpfe",
            "--predictions",
            "tfidf_reddit.csv",
            "tfidf_twitter.csv",
            "--name-pattern",
            "{model}_{platform}",
            "--reference",
            "reddit",
            "--out",
            "audit",
            "--n-boot-significance",
            "50",
            "--n-boot-ece",
            "50",
            "--no-figures",
        ],
        cwd=tmp_path,
        env=env,
    )
    report = json.loads((tmp_path / "audit" / "report.json").read_text())
    assert report["mhaudit_version"] == mhaudit.__version__
    assert "tfidf" in run.stdout and (tmp_path / "audit" / "report.html").is_file()
