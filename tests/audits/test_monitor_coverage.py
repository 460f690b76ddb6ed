"""The monitor's report says what share of the target the collection can show: the recorded filter's recall on
the Bluesky depression set (from the packaged table), in the summary and a section of its own; from Python on a
SYNTHETIC label-shift stream, and through `mhaudit audit monitor` on a real SQLite store whose run recorded the
lexicons (SYNTHETIC posts)."""

from __future__ import annotations

import json
from dataclasses import replace

from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.lexicons import Lexicon
from tests.audits import test_monitor
from tests.audits.test_monitor import _label_shift_stream, _monitor, _store

fixture_setup = test_monitor.fixture_setup  # the module's `setup`: a tfidf-lr model on SYNTHETIC tweets, its reference

SI_MH = {"si": Lexicon.load("si").sha256, "mh": Lexicon.load("mh").sha256}
SENTENCE = (
    "The collection's filter (si+mh) keeps an estimated 0.613 (95% CI 0.570–0.654) of the depressive posts "
    "of the Bluesky depression set (precision 0.153 at a base rate of 0.113; it keeps 0.7% of a general "
    "stream, GoEmotions)."
)


def test_the_report_states_the_filters_recall():
    import mhaudit as mh

    inputs, _ = _label_shift_stream(n_windows=3, per_window=300)
    options = mh.MonitorOptions(n_boot=40, figures=False)
    result = mh.audit_monitor(replace(inputs, collection=[SI_MH]), options)
    # the prevalence is among the kept posts, and the filter's recall follows it at once
    first, rest = result.summary.split(" in the latest judged window", 1)
    assert first.startswith("SYNTHETIC data. Prevalence of depression among the posts the collection kept (EM")
    assert rest.split(". ", 1)[1].startswith(SENTENCE), result.summary
    section = next(s for s in result.sections if s.title == "Coverage of the target")
    assert section.text.startswith(SENTENCE) and "proxy" in section.text
    assert result.options["collection"] == [SI_MH]
    custom = mh.audit_monitor(replace(inputs, collection=[SI_MH, {"mine": "0" * 64}]), options)
    assert "The collection's runs used 2 filters." in custom.summary
    assert "The collection's filter (mine) has no measured recall" in custom.summary
    plain = mh.audit_monitor(inputs, options)  # no filter recorded: no section, the summary as before
    assert all(s.title != "Coverage of the target" for s in plain.sections)
    assert plain.summary == result.summary.replace(" " + SENTENCE, "").replace(
        " among the posts the collection kept", ""
    )


def test_audit_monitor_reads_the_filter_from_the_store(setup, tmp_path):
    work, texts = setup
    posts = simulate_stream(
        texts["depression"], texts["other"], StreamConfig(n_windows=2, per_window=150, change_at=1, seed=4)
    )
    store = tmp_path / "posts.sqlite"
    with PostStore(store) as s:
        s.start_run("r1", lexicons=SI_MH)
    _store(store, posts)
    result = _monitor(work, store, tmp_path / "out")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert SENTENCE in report["summary"] and "among the posts the collection kept" in report["summary"]
    assert SENTENCE in (tmp_path / "out" / "report.md").read_text()
