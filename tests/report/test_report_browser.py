"""The report as a reader sees it, in headless Chromium: the scorecard in the first 1400 x 900 viewport,
nothing wider than the window, every figure loaded, every collapsed table opens. SYNTHETIC predictions."""

from __future__ import annotations

from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe
from mhaudit.report import write_report
from mhaudit.tables.prediction_files import read_predictions
from tests.tables.test_prediction_files import PATTERN, published

WIDTH, HEIGHT = 1400, 900
TABLES_FOLDED = "[...document.querySelectorAll('details')].filter(d => !d.closest('footer'))"  # not inputs, options


def assert_links_resolve(page, folder):
    """Every CSV link names a file beside the report; every in-page link an element of the page."""
    links = page("return [...document.querySelectorAll('a')].map(a => a.getAttribute('href'))")
    files = [href for href in links if not href.startswith("#")]
    assert files and all((folder / href).exists() for href in files)
    ids = page("return [...document.querySelectorAll('[id]')].map(e => e.id)")
    assert all(href[1:] in ids for href in links if href.startswith("#"))


def test_the_cpfe_report_reads_in_a_browser(tmp_path, open_browser):
    paths = published(tmp_path / "files", seeds=(42, 7))  # 2 models x 2 seeds x 2 platforms
    result = audit_cpfe(
        CPFEInputs(read_predictions(paths, name_pattern=PATTERN), synthetic=True),
        CPFEOptions(reference="reddit", n_boot_significance=200, n_boot_ece=100),
    )
    write_report(result, tmp_path / "report")
    driver = open_browser(WIDTH, HEIGHT)
    driver.get((tmp_path / "report" / "report.html").as_uri())
    page = driver.execute_script
    card = page(
        "const t = document.querySelector('table.scorecard').getBoundingClientRect();return [t.top, t.bottom, t.right];"
    )
    assert 0 < card[0] < card[1] <= HEIGHT and card[2] <= WIDTH  # the scorecard is seen first, whole
    assert page("return document.querySelectorAll('table.scorecard tbody tr').length") == 2  # bert, roberta
    header = page("return [...document.querySelectorAll('table.scorecard th')].map(th => th.firstChild.textContent)")
    assert header == ["subject", "target", "discrimination", "calibration", "significance", "equity"]
    assert page("return document.documentElement.scrollWidth") <= page("return window.innerWidth")
    images = page("return [...document.images].map(i => [i.complete, i.naturalWidth])")
    assert len(images) >= 5 and all(done and width > 0 for done, width in images)
    closed = page(f"return {TABLES_FOLDED}.length")
    assert closed >= 3  # per-class AUC, per-class calibration, reliability, ...
    page("document.querySelectorAll('details').forEach(d => d.open = true)")  # the footer's inputs and options too
    heights = page(f"return {TABLES_FOLDED}.map(d => d.querySelector('table').offsetHeight)")
    assert len(heights) == closed and min(heights) > 100
    assert page("return document.documentElement.scrollWidth") <= page("return window.innerWidth")
    assert_links_resolve(page, tmp_path / "report")
    assert "mhaudit" in page("return document.querySelector('footer').textContent")


def test_the_demos_combined_report_reads_in_a_browser(trust_demo, open_browser):
    """The demo's trust report: the models' scorecard whole in the first screen with every axis for both models,
    no horizontal overflow, every figure loaded, every collapsed table opens."""
    out = trust_demo[0]
    driver = open_browser(WIDTH, HEIGHT)
    driver.get((out / "report.html").as_uri())
    page = driver.execute_script
    card = page(
        "const t = document.querySelector('table.scorecard').getBoundingClientRect();return [t.top, t.bottom, t.right];"
    )
    assert 0 < card[0] < card[1] <= HEIGHT and card[2] <= WIDTH
    header = page(
        "return [...document.querySelectorAll('table.scorecard:not(.others) th')].map(th => th.firstChild.textContent)"
    )
    assert header == [
        "subject",
        "target",
        "discrimination",
        "calibration",
        "significance",
        "equity",
        "attribution",
        "expected on the target, before labels",
        "label source",
        "human validation",
    ]
    rows = page(
        "return [...document.querySelectorAll('table.scorecard:not(.others) tbody tr')]"
        ".map(tr => [...tr.cells].map(td => td.textContent.trim()))"
    )
    for model in ("tfidf-lr", "char-tfidf-lr"):
        cells = [r[2:] for r in rows if r[0] == model]
        assert all(any(c[i] for c in cells) for i in range(len(header) - 2)), model  # every axis has a verdict
    # 6 contrasts, 2 random-POS controls, rule, pair
    assert page("return document.querySelectorAll('table.others tbody tr').length") == 10
    assert page("return document.documentElement.scrollWidth") <= page("return window.innerWidth")
    images = page("return [...document.images].map(i => [i.complete, i.naturalWidth])")
    assert len(images) >= 12 and all(done and width > 0 for done, width in images)
    closed = page(f"return {TABLES_FOLDED}.length")
    assert closed >= 5
    page("document.querySelectorAll('details').forEach(d => d.open = true)")
    heights = page(f"return {TABLES_FOLDED}.map(d => d.querySelector('table').offsetHeight)")
    assert len(heights) == closed and min(heights) > 100
    assert page("return document.documentElement.scrollWidth") <= page("return window.innerWidth")
    assert_links_resolve(page, out)
