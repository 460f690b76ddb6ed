"""SVG figures without matplotlib (mhaudit.report.svg and the CPFE figures drawn with it): each parses as XML,
draws one mark per value of a known table, skips NaN and says so, escapes hostile names, and gives the same
bytes for the same input. SYNTHETIC tables."""

import math
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mhaudit.audits.cpfe import figures
from mhaudit.report.svg import COLOURS, Axis, Panel, figure, nice_range, nice_ticks, text_width, wrap

NS = {"s": "http://www.w3.org/2000/svg"}
HOSTILE = "<script>alert('x')</script> & \"m\"\x01"


def parse(svg: bytes) -> ET.Element:
    assert svg.startswith(b"<svg ") and svg.decode("utf-8")
    return ET.fromstring(svg)


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


def words(root: ET.Element) -> str:
    """Every text of the figure joined by spaces: a label wrapped onto two lines reads as one."""
    return " ".join(texts(root))


def filled(root: ET.Element, tag: str, colour: str) -> int:
    return sum(e.get("fill") == colour for e in root.iter(f"{{http://www.w3.org/2000/svg}}{tag}"))


def test_nice_ticks_and_ranges():
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0.4, 1.0, 6) == [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert nice_ticks(0, 37) == [0, 10, 20, 30]
    assert nice_ticks(-3, 12) == [0, 5, 10]  # -3 is inside, but no multiple of 5 below 0 is
    assert nice_ticks(0.5, 0.5) == [0.5] and nice_ticks(math.nan, 1) == []
    assert nice_range(0.412, 0.987) == (0.4, 1.0) and nice_range(3, 3) == (2.4, 3.6)
    assert nice_range(math.nan, 2) == (0.0, 1.0)
    assert [t for _, t in Axis(0, 1).marks()] == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert [t for _, t in Axis(0, 0.5, ticks=None).marks()][:2] == ["0.0", "0.1"]


def test_text_is_estimated_and_wrapped():
    assert text_width("iii") < text_width("mmm") and text_width("ab", 22) == 2 * text_width("ab", 11)
    lines = wrap("roberta-very-long-model-name, seed 0 · reddit", 150)
    assert "".join(lines).replace(" ", "") == "roberta-very-long-model-name,seed0·reddit"
    assert len(lines) > 1 and all(text_width(line) <= 150 for line in lines)


def discrimination() -> pd.DataFrame:
    rows = [
        {"model": m, "seed": s, "platform": p, "dataset": p, "macro_auc": 0.9 - 0.1 * i - 0.01 * s}
        for m in ("m1", "m2")
        for s in (0, 1)
        for i, p in enumerate(("home", "away1", "away2"))
    ]
    rows[-1]["macro_auc"] = rows[-4]["macro_auc"] = math.nan  # m2 on away2 has no value in any seed
    return pd.DataFrame(rows)


def test_auc_bars_one_per_model_and_platform_with_whiskers_and_a_note():
    root = parse(figures.auc_degradation(discrimination()))
    assert filled(root, "rect", COLOURS[0]) == 3 + 1 and filled(root, "rect", COLOURS[1]) == 2 + 1  # + legend
    whiskers = [e for e in root.iter("{http://www.w3.org/2000/svg}line") if e.get("stroke") == "#222"]
    assert len(whiskers) == 5 * 3  # SD over the two seeds: a stem and two caps per drawn bar
    shown = texts(root)
    assert "1 model-platform pairs without a value (NaN) not drawn." in shown
    assert root.find("s:title", NS).text == "Macro AUC by model and data set"
    assert "data set" in shown and "platform (data set)" not in shown  # the axis title says what the ticks show
    marked = discrimination().assign(is_reference=lambda t: t["platform"] == "home")
    assert "home (reference)" in texts(parse(figures.auc_degradation(marked)))
    assert "AUC (mean ± SD over seeds)" in words(root) and "chance (0.5)" in shown


def per_class() -> pd.DataFrame:
    rows = [
        {
            "model": HOSTILE,
            "seed": s,
            "platform": p,
            "dataset": p,
            "class": c,
            "auc": 0.8 + 0.01 * j,
            "ci_low": 0.75,
            "ci_high": 0.9,
        }
        for s in (3, 4)
        for p in ("home", "away")
        for j, c in enumerate("abc")
    ]
    rows[1]["auc"] = math.nan
    return pd.DataFrame(rows)


def test_forest_one_point_per_class_of_the_first_seed_escaping_names():
    svg = figures.forest(per_class())
    root = parse(svg)
    assert filled(root, "circle", COLOURS[0]) == 5 + 1  # 6 rows of seed 3, one NaN; + the legend's
    shown = texts(root)
    assert f"{HOSTILE[:-1]} · home · a" in shown and "1 classes without a value (NaN) not drawn." in shown
    assert not list(root.iter("script")) and not list(root.iter("{http://www.w3.org/2000/svg}script"))
    assert b"<script" not in svg and "one-vs-rest AUC with 95% DeLong CI (seed 3)" in shown
    assert svg == figures.forest(per_class())  # same input, same bytes


def test_heatmap_cells_values_and_na():
    table = pd.DataFrame(
        {
            "model": "m",
            "seed": [0, 0, 1, 1],
            "platform": ["away"] * 4,
            "dataset": ["away"] * 4,
            "class": ["<b>", "c2"] * 2,
            "disparate_impact": [0.5, math.nan, 0.7, math.nan],
        }
    )
    root = parse(figures.heatmap(table, "disparate_impact", "disparate impact (1 = parity)"))
    shown = texts(root)
    assert "0.60" in shown and "n/a" in shown and "<b>" in shown  # the mean over seeds; a class name as text
    cells = [e for e in root.iter("{http://www.w3.org/2000/svg}rect") if e.get("stroke") == "#fff"]
    assert len(cells) == 2 and cells[1].get("fill") == "#e0e0e0"
    assert "disparate impact (1 = parity), mean over 2 runs (1 model, 2 seeds each)" in words(root)


def test_reliability_grid_and_lengths_histograms():
    curves = pd.DataFrame(
        [
            {
                "model": m,
                "seed": 0,
                "platform": p,
                "dataset": p,
                "stage": st,
                "n": n,
                "confidence": c,
                "accuracy": c - 0.05,
            }
            for m in ("m1", "m2")
            for p in ("a", "b", "c")
            for st in ("before", "after")
            for c, n in ((0.3, 5), (0.6, 0), (0.9, 7))
        ]
    )
    root = parse(figures.reliability(curves))
    assert sum(t.startswith(("m1, seed 0", "m2, seed 0")) for t in texts(root)) == 6  # 2 models x 3 platforms
    assert len(list(root.iter("{http://www.w3.org/2000/svg}polyline"))) == 12  # before and after, n > 0 bins only
    counts = {"forum": np.array([3, 30, 300, 40]), "tweets": np.array([5, 8, 12])}
    root = parse(figures.lengths(counts))
    assert filled(root, "rect", COLOURS[0]) == 4 and filled(root, "rect", COLOURS[1]) == 3  # one bar per value here
    assert "forum" in texts(root) and "n = 4, median 35 words" in texts(root)


def test_a_panel_skips_nan_and_clips_to_its_box():
    panel = Panel(Axis(0, 1), Axis(0, 1), width=100, height=100)
    panel.line([0, 0.5, math.nan, 0.8, 1.0], [0, 2.0, 0.3, 0.4, math.nan], "#123456")
    root = parse(figure([[panel, None], [None, Panel(Axis(0, 1), Axis(0, 1))]], "t"))
    lines = [e.get("points") for e in root.iter("{http://www.w3.org/2000/svg}polyline")]
    assert len(lines) == 1 and len(lines[0].split()) == 2  # a run of two; 0.8 alone is a marker only
    assert filled(root, "circle", "#123456") == 3
    top = min(float(p.split(",")[1]) for p in lines[0].split())
    frame = next(e for e in root.iter("{http://www.w3.org/2000/svg}rect") if e.get("stroke") == "#aaa")
    assert top == pytest.approx(float(frame.get("y")))  # 2.0 drawn at the box's top edge, not beyond


def test_the_cpfe_audit_draws_its_figures_without_importing_matplotlib():
    """Importing matplotlib cost `audit cpfe` 0.35 s and drawing with it 0.4-0.7 s; every figure is SVG now."""
    code = (
        "import sys, threading; from tests.audits.test_cpfe import synthetic_predictions; "
        "from mhaudit.audits.cpfe import CPFEInputs, CPFEOptions, audit_cpfe; "
        "before = 'matplotlib' in sys.modules; "
        "r = audit_cpfe(CPFEInputs(synthetic_predictions(n=150, models=('m1',), seeds=(0,))), "
        "CPFEOptions(reference='home', n_boot_significance=50, n_boot_ece=50)); "
        "[t.join() for t in threading.enumerate() if t is not threading.main_thread()]; "  # the import thread
        "print(before, sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'), "
        "all(f.startswith(b'<svg ') for f in r.figures.values()), len(r.figures))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.split() == ["False", "[]", "True", "5"]  # AUC bars, forest, reliability, two heatmaps


def test_the_estimate_forest_marks_untrusted_targets_open_and_the_reference_as_a_tick():
    from mhaudit.audits.estimate.figures import COLOURS as METHOD, estimate_forest

    rows = [
        {
            "model": "m",
            "seed": 0,
            "dataset": target,
            "method": method,
            "metric": metric,
            "estimate": 0.6,
            "ci_low": 0.5,
            "ci_high": 0.7,
            "reference_value": 0.8,
            "trusted": target == "a",
        }
        for target in ("a", "b")
        for method in ("cbpe", "atc", "doc")
        for metric in ("accuracy", "macro_f1")
    ]
    root = parse(estimate_forest(pd.DataFrame(rows)))
    circles = list(root.iter("{http://www.w3.org/2000/svg}circle"))
    plotted = [c for c in circles if c.get("r") == "3.2"]  # not the legend's (2.8)
    assert len(plotted) == 6 and sum(c.get("fill") == "#fff" for c in plotted) == 3  # target b: open
    assert {c.get("stroke") for c in plotted} == set(METHOD.values())
    ticks = [e for e in root.iter("{http://www.w3.org/2000/svg}line") if e.get("stroke") == "#000"]
    assert len(ticks) == 2 + 1  # one reference per row, + the legend's
    assert "m seed 0 → a" in texts(root) and "untrusted target (open)" in texts(root)


def test_agreement_lines_one_panel_per_target_on_probit_axes():
    from mhaudit.audits.estimate.figures import agreement_lines

    pairs = pd.DataFrame(
        {
            "platform": ["t1"] * 3 + ["t2"] * 3,
            "dataset": ["t1"] * 3 + ["t2"] * 3,
            "agreement_reference": [0.5, 0.7, 0.9] * 2,
            "agreement_target": [0.45, 0.6, 0.8] * 2,
        }
    )
    ensemble = pd.DataFrame(
        {
            "platform": ["t1", "t2"],
            "dataset": ["t1", "t2"],
            "method": "aline-d",
            "reference_value": [0.8, 0.85],
            "estimate": [0.7, 0.75],
        }
    )
    lines = pd.DataFrame(
        {
            "platform": ["t1", "t2"],
            "dataset": ["t1", "t2"],
            "slope": [0.9, math.nan],
            "intercept": [-0.1, math.nan],
            "r2": [0.97, math.nan],
            "trusted": [True, False],
        }
    )
    root = parse(agreement_lines(pairs, ensemble, lines))
    shown = texts(root)
    assert "t1: R² 0.97, trusted" in shown and "t2: no line, untrusted" in shown
    assert filled(root, "circle", "#999") == 6 + 1 and filled(root, "circle", "#0072B2") == 2 + 1  # + legend
    assert len(list(root.iter("{http://www.w3.org/2000/svg}polyline"))) == 1  # t2 has no line to draw
    assert {"0.5", "0.7", "0.8", "0.9"} <= set(shown)  # probit ticks labelled as shares
