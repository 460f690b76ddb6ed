"""Shared test fixtures. Real data sets are read in place from ../shared/data (never copied)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (a failure found once is found again, and the suite's outcome
# does not depend on the draw), with no per-example deadline (a busy machine makes any deadline flaky).
settings.register_profile("mhaudit", derandomize=True, deadline=None, database=None)
settings.load_profile("mhaudit")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("MHAUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"
os.environ.setdefault("MHAUDIT_SECRET", "mhaudit-test-secret")  # tests never write ~/.config/mhaudit/secret
# spaCy parses are cached by content: one cache per run, outside the home folder, removed at its end. The
# xdist workers and the CLI subprocesses inherit the variable, so they share it (the cache is SQLite in WAL
# mode and takes concurrent writers). A cache you set yourself is kept (parses then last between runs).
_OWN_CACHE = None
if "MHAUDIT_CACHE" not in os.environ:
    _OWN_CACHE = os.environ["MHAUDIT_CACHE"] = tempfile.mkdtemp(prefix="mhaudit-test-cache-")
# Tiny models on a shared 2-core machine: one torch thread avoids oversubscription (measured: 50x slower
# fits with two threads while other processes ran).
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as info:
            return next((set(line.split(":", 1)[1].split()) for line in info if line.startswith("flags")), set())
    except OSError:
        return set()


# OpenBLAS picks its kernels by CPU (SkylakeX where AVX-512 is, Haswell on other AVX2 CPUs), and iterative
# solvers land on other last digits under each: the golden file was written with the Haswell kernels, which
# every AVX2 CPU runs, so the tests ask for them (before numpy loads OpenBLAS) wherever they can run.
if {"avx2", "fma"} <= _cpu_flags():
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")


def data_dir(name: str) -> Path:
    """A folder of ../shared/data, or skip the test with the reason."""
    folder = SHARED_DATA / name
    if not folder.is_dir():
        pytest.skip(f"real data set '{name}' not found at {folder} (../shared/data is absent)")
    return folder


def depression_corpora():
    """Depression Reddit and the Bluesky depression set as `mhaudit data import` makes them (seed 0; Bluesky's
    empty posts dropped): the home corpus and the target of many real-data tests."""
    from mhaudit.tables.corpus.importing import ImportOptions, import_source

    reddit = import_source(
        "depression_reddit",
        [data_dir("depression_reddit_cleaned") / "depression_dataset_reddit_cleaned.csv"],
        ImportOptions(seed=0),
    ).corpus
    bluesky = import_source(
        "bluesky_depression",
        [data_dir("bluesky_depression") / "bluesky-depression-dataset.csv"],
        ImportOptions(seed=0, drop_empty=True),
    ).corpus
    return reddit, bluesky


@pytest.fixture
def shared_data():
    return data_dir


# --- a real browser: headless Chromium from the Debian packages (.ci/run installs them) ------------------------
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@pytest.fixture
def open_browser():
    """A function (width, height) -> a headless Chromium WebDriver, quit after the test."""
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.skip(
            f"the browser test needs the Debian packages chromium and chromium-driver "
            f"({CHROMIUM} / {CHROMEDRIVER} absent)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (dev extra)")
    from selenium.webdriver.chrome.service import Service

    drivers = []

    def start(width: int, height: int):
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
            f"--window-size={width},{height}",
        ):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
        driver.set_page_load_timeout(20)
        drivers.append(driver)
        return driver

    yield start
    for driver in drivers:
        driver.quit()


# --- CI runs everything: under CI=true a skipped test fails the run, except the cases allowed here --------
# Each entry: a test id prefix -> why it may skip in CI. Keep this list short; .ci/run installs the rest.
SKIP_ALLOWED_IN_CI: dict[str, str] = {}


def _skip_allowed(nodeid: str) -> bool:
    return any(nodeid.startswith(prefix) for prefix in SKIP_ALLOWED_IN_CI)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if (
        os.environ.get("CI") == "true"
        and report.skipped
        and not hasattr(report, "wasxfail")
        and not _skip_allowed(report.nodeid)
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (
            f"skipped under CI=true ({reason}); .ci/run must install what this test needs, "
            "or tests/conftest.py SKIP_ALLOWED_IN_CI must say why it may skip"
        )


# --- the parallel run: `-n auto --dist loadgroup` (pyproject.toml); `-n0` runs in one process, for debugging ---
# Tests that need one of these expensive fixtures run on one xdist worker, so it is built once per run: module
# fixtures that train models or run audits (a group per file), then session fixtures that several files share.
MODULE_FIXTURES = (
    "trust_run",
    "setup",
    "runs",
    "run",
    "fitted",
    "trained",
    "published",
    "released_audit",
    "two_audits",
    "sdist_and_wheel",
    "replayed_streams",
)
SESSION_FIXTURES = ("trust_demo", "dreaddit_train_parsed", "llama_url", "pg_server")


def _worker_group(item) -> str | None:
    if any(name in item.fixturenames for name in MODULE_FIXTURES):
        return item.module.__name__
    return next((name for name in SESSION_FIXTURES if name in item.fixturenames), None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker per core for the suite or a folder; none (no start-up) when only files are named."""
    named = [config.invocation_params.dir / arg.split("::")[0] for arg in config.args]
    if named and all(path.is_file() for path in named):
        return 0
    return None  # xdist's own count


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        group = _worker_group(item)
        if group and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
            # xdist 3.8 tells the scheduler the group by renaming the test (`test@group`), but pytest 9.2 keeps
            # the name in `_id`, so the rename is lost and the group ignored (pytest-dev/pytest-xdist#1386):
            # rename it here where `_id` exists. A fixed xdist adds a second `@group`; the last one counts.
            if getattr(config.option, "loadgroup", False) and hasattr(item, "_id"):
                item._id = type(item._id).parse(f"{item.nodeid}@{group}")


def pytest_unconfigure(config):
    if _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def trust_demo(tmp_path_factory):
    """`mhaudit demo` (seed 0, default sizes) run once per session: (folder, results by sub-folder, "" for the
    combined report). The golden test, the demo's tests and the browser test all read it."""
    from mhaudit.core.progress import Progress
    from mhaudit.experiments.demo import run_trust_demo

    out = tmp_path_factory.mktemp("demo")
    told = []
    results = run_trust_demo(out, seed=0, progress=Progress(told.append))
    return out, results, told
