"""Reruns of the monitor reuse unchanged windows (audits.monitor.reuse, weak_supervision.collect.window_cache): on a
SYNTHETIC stream, a rerun with nothing new computes no window and reports what a full recompute reports, bit for
bit; a new post in one window recomputes that window only; another n_boot or model recomputes all; through the
command, the cache lives in the post store."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import replace

import pandas as pd

from mhaudit.stats.pair_estimate import TrustOptions
from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from mhaudit.weak_supervision.collect.store import PostStore
from tests.audits.test_monitor import CLASSES, _monitor, _store, _windows, fixture_setup  # noqa: F401  (fixture)

N_WINDOWS = 3


def _scored(setup, tmp_path, per_window: int = 250):
    import mhaudit as mh
    from mhaudit.models import load_model
    from mhaudit.weak_supervision.collect.scores import scored_posts
    from mhaudit.weak_supervision.collect.scoring import model_digest, score_posts

    work, texts = setup
    posts = simulate_stream(
        texts["depression"],
        texts["other"],
        StreamConfig(n_windows=N_WINDOWS, per_window=per_window, change_at=2, seed=11),
    )
    store = _store(tmp_path / "posts.sqlite", posts)
    digest = model_digest(work / "model")
    score_posts(store, load_model, work / "model", digest)
    with PostStore(store) as s:
        scored = scored_posts(s, digest, CLASSES)
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    return mh.MonitorInputs(scored, reference, "tfidf-lr", digest, CLASSES)


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.table("windows"), b.table("windows"), check_exact=True)
    pd.testing.assert_frame_equal(a.verdicts, b.verdicts, check_exact=True)
    assert a.summary == b.summary


def test_unchanged_windows_are_read_not_recomputed_and_equal_a_full_recompute(setup, tmp_path):
    import mhaudit as mh
    from mhaudit.audits.monitor import window_context

    inputs = _scored(setup, tmp_path)
    options = mh.MonitorOptions(positive="depression", n_boot=40, figures=False)
    full = mh.audit_monitor(inputs, options)
    rows = full.outputs["window_rows"]
    assert full.outputs["windows_recomputed"] == N_WINDOWS and len(rows) == N_WINDOWS and rows["key"].is_unique
    assert {"em_prior_depression", "expected_macro_f1", "estimate_trusted"} <= set(rows.columns)
    assert "psi_score" not in rows.columns and "cusum_z" not in rows.columns  # cheap or cross-window: recomputed

    again = mh.audit_monitor(replace(inputs, cached_windows=rows), options)
    assert again.outputs["windows_recomputed"] == 0
    _same(again, full)
    pd.testing.assert_frame_equal(again.outputs["window_rows"], rows, check_exact=True)

    # one late post in the middle window: that window is recomputed, the others are read; equal to a full recompute
    posts = inputs.posts
    late = posts.iloc[[len(posts) // 2]].assign(uri="at://late/app.bsky.feed.post/1")
    grown = replace(inputs, posts=pd.concat([posts, late], ignore_index=True))
    partial = mh.audit_monitor(replace(grown, cached_windows=rows), options)
    assert partial.outputs["windows_recomputed"] == 1
    _same(partial, mh.audit_monitor(grown, options))
    changed = partial.outputs["window_rows"]["key"] != rows["key"]
    assert changed.tolist() == [False, True, False]

    # another n_boot recomputes every window; options read after the windows (PSI thresholds) reuse them all
    assert (
        mh.audit_monitor(replace(inputs, cached_windows=rows), replace(options, n_boot=41)).outputs[
            "windows_recomputed"
        ]
        == N_WINDOWS
    )
    context = window_context(inputs, options)
    assert window_context(inputs, replace(options, psi_warn=0.2, psi_fail=0.3, figures=True)) == context
    for other in (
        replace(options, seed=1),
        replace(options, min_posts=50),
        replace(options, window="12h"),
        replace(options, positive="other"),
        replace(options, trust=TrustOptions(domain_auc_cutoff=0.7)),
    ):
        assert window_context(inputs, other) != context, other
    # another model (digest) or another reference: another context, so no cached key matches
    assert window_context(replace(inputs, model_digest="0" * 64), options) != context
    reference = replace(inputs.reference, frame=inputs.reference.frame.iloc[1:])
    assert window_context(replace(inputs, reference=reference), options) != context


def test_the_command_keeps_the_windows_in_the_post_store(setup, tmp_path):
    """Two rounds of the command on the same store: the second computes no window and writes the same windows;
    a post added to one window makes the next round compute that window only, and the table equals a full
    recompute from Python."""
    import mhaudit as mh
    from mhaudit.weak_supervision.collect.scores import scored_posts
    from mhaudit.weak_supervision.collect.scoring import model_digest

    work, texts = setup
    posts = simulate_stream(
        texts["depression"], texts["other"], StreamConfig(n_windows=N_WINDOWS, per_window=250, change_at=2, seed=12)
    )
    store = _store(tmp_path / "posts.sqlite", posts[1:])
    reports, computed = [], []
    for round_ in range(3):
        if round_ == 2:  # the first post, in the first window, arrives late
            with PostStore(store) as s:
                s.commit_batch(posts[:1], cursor=len(posts) + 1)
        r = _monitor(work, store, tmp_path / f"round{round_}", "--seed", "1")
        assert r.exit_code == 0, r.output
        reports.append(json.loads((tmp_path / f"round{round_}" / "report.json").read_text())["options"])
        computed.append(int(re.search(rf"(\d+) of {N_WINDOWS} windows computed", r.output).group(1)))
    assert computed == [N_WINDOWS, 0, 1]
    assert [o["scored_now"] for o in reports] == [len(posts) - 1, 0, 1]
    pd.testing.assert_frame_equal(_windows(tmp_path / "round0"), _windows(tmp_path / "round1"), check_exact=True)
    with sqlite3.connect(store) as db:  # one row per window of the one context used; a row damaged by hand
        assert db.execute("SELECT count(*), count(DISTINCT context) FROM monitor_windows").fetchone() == (N_WINDOWS, 1)
        db.execute(
            "UPDATE monitor_windows SET cells = '{\"em_prior' WHERE key = (SELECT min(key) FROM monitor_windows)"
        )
    r = _monitor(work, store, tmp_path / "round3", "--seed", "1")  # is a miss: that window is computed again
    assert f"1 of {N_WINDOWS} windows computed; {N_WINDOWS - 1} read from the store" in r.output, r.output
    pd.testing.assert_frame_equal(_windows(tmp_path / "round2"), _windows(tmp_path / "round3"), check_exact=True)
    digest = model_digest(work / "model")
    with PostStore(store) as s:
        scored = scored_posts(s, digest, CLASSES)
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    full = mh.audit_monitor(
        mh.MonitorInputs(scored, reference, "tfidf-lr", digest, CLASSES),
        mh.MonitorOptions(positive="depression", n_boot=100, seed=1, figures=False),
    )
    pd.testing.assert_frame_equal(
        full.table("windows").reset_index(drop=True), _windows(tmp_path / "round2"), check_dtype=False, check_exact=True
    )
