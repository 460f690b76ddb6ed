"""`--history` bounds what the monitor reads and analyses (audits.monitor.windows.in_history,
weak_supervision.collect.scores.scored_posts(since=...)): on SYNTHETIC streams, a monitor with a history reports
what the monitor without one reports on only the history's posts, chosen here independently in pandas (whole
windows from the newest post's createdAt less the history, floored to the window grid); createdAt strings with
offsets, which compare imperfectly as text, are read all the same; no history is today's monitor; a bad history
is one sentence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from mhaudit.weak_supervision.collect.store import PostStore
from tests.audits.test_monitor import CLASSES, _label_shift_stream, _monitor, _store, _windows
from tests.audits.test_monitor import fixture_setup  # noqa: F401  (fixture)
from tests.cli_checks import assert_one_sentence_failure
from tests.weak_supervision.collect.pg_server import fixture_pg_server, fixture_pg_url  # noqa: F401  (fixtures)


def _history_posts(posts: pd.DataFrame, history: str, window: str = "1D") -> pd.DataFrame:
    """The test's own choice of the history's posts: every post at or after the start of the window holding the
    newest createdAt less the history."""
    times = pd.to_datetime(posts["created_at"], utc=True, format="ISO8601")
    start = (times.max() - pd.Timedelta(history.replace("d", "D"))).floor(window)
    return posts[(times >= start).to_numpy()].reset_index(drop=True)


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.table("windows"), b.table("windows"), check_exact=True)
    pd.testing.assert_frame_equal(a.verdicts, b.verdicts, check_exact=True)


def test_history_equals_the_monitor_on_the_history_posts_only():
    import mhaudit as mh
    from mhaudit.audits.monitor import window_context

    inputs, _ = _label_shift_stream(n_windows=10, per_window=200, change_at=7)
    options = mh.MonitorOptions(n_boot=40, figures=False, min_posts=100)
    full = mh.audit_monitor(inputs, options)
    assert len(full.table("windows")) == 10
    # none: bit-equal to the monitor without the option
    _same(mh.audit_monitor(inputs, replace(options, history=None)), full)
    assert "History" not in full.summary
    for history, n_windows in (("100h", 5), ("3d", 4)):  # the newest post is at 23:52 of day 10
        bounded = mh.audit_monitor(inputs, replace(options, history=history))
        alone = mh.audit_monitor(replace(inputs, posts=_history_posts(inputs.posts, history)), options)
        _same(bounded, alone)
        table = bounded.table("windows")
        assert len(table) == n_windows and (table["n_posts"] == 200).all()  # whole windows only
        assert table["window"].tolist() == full.table("windows")["window"].tolist()[-n_windows:]
        assert bounded.options["n_posts"] == 200 * n_windows
        assert f"History: the last {history} ({n_windows:,} windows from {table['window'].iat[0]})" in bounded.summary
        assert f"only the whole windows within {history}" in bounded.sections[0].text
        # a window's costly statistics do not depend on the history: the last round's cached rows are reused
        assert window_context(inputs, replace(options, history=history)) == window_context(inputs, options)
        again = mh.audit_monitor(
            replace(inputs, cached_windows=full.outputs["window_rows"]), replace(options, history=history)
        )
        assert again.outputs["windows_recomputed"] == 0
        _same(again, bounded)
        # the CUSUM and the length/language baseline start at the history's first window, and the prevalence
        # the summary moves from is the history's first judged windows'
        em = full.table("windows")["em_prior_depression"].to_numpy()
        assert f"from {em[-n_windows : 3 - n_windows].mean():.3f} in the first 3 judged windows" in bounded.summary


def test_bad_history_is_one_sentence():
    import pytest

    import mhaudit as mh
    from mhaudit.core.errors import InputError

    for history, says in (
        ("soon", "the history 'soon' must be a number and a unit"),
        ("0d", "the history '0d' must be a number and a unit"),
        ("6h", "the history 6h is shorter than the window 1d; keep at least one window"),
    ):
        with pytest.raises(InputError) as caught:
            mh.MonitorOptions(history=history)
        assert str(caught.value).startswith(says)
    assert mh.MonitorOptions(history="90d").history_length == pd.Timedelta("90D")
    assert mh.MonitorOptions().history_length is None


def _with_offsets(posts: list[dict]) -> list[dict]:
    """Every third post's createdAt written in UTC-05:00 and every third in UTC+09:00: the same moments, other
    text (text order is then not time order)."""
    out = []
    for i, post in enumerate(posts):
        time = pd.Timestamp(post["created_at"])
        offset = ("-05:00", "+09:00", None)[i % 3]
        text = post["created_at"] if offset is None else time.tz_convert(offset).isoformat()
        out.append(dict(post, created_at=text))
    return out


def test_command_reads_only_the_history_from_the_store(setup, tmp_path):
    """Through `mhaudit audit monitor --history` on a SQLite store with createdAt offsets: the posts read in SQL
    hold the history's and at most a day or two more; the report equals audit_monitor on the history's posts."""
    import mhaudit as mh
    from mhaudit.audits.monitor.windows import history_start
    from mhaudit.weak_supervision.collect.scores import newest_scored, run_predictions, scored_posts
    from mhaudit.weak_supervision.collect.scoring import model_digest

    work, texts = setup
    posts = _with_offsets(
        simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=8, per_window=150, seed=12))
    )
    store = _store(tmp_path / "posts.sqlite", posts)
    r = _monitor(work, store, tmp_path / "report", "--history", "3d")
    assert r.exit_code == 0, r.output
    assert "History: the last 3d (4 windows from 2026-01-05 00:00)" in " ".join(r.output.split())
    digest = model_digest(work / "model")
    with PostStore(store) as s:
        every = scored_posts(s, digest, CLASSES)
        newest = newest_scored(s, digest)
        since = history_start(newest, pd.Timedelta("3D"), pd.Timedelta("1D"))
        read = scored_posts(s, digest, CLASSES, since)
        uris = run_predictions(s, {"deployed": digest}, since)["uri"]
    mine = _history_posts(every, "3d")
    # the largest createdAt text need not be the newest moment (offsets): the day of slack covers it
    assert newest <= pd.to_datetime(every["created_at"], utc=True, format="ISO8601").max()
    assert len(every) == 1200 and len(mine) == 600 and set(mine["uri"]) <= set(read["uri"])
    assert set(read["uri"]) <= set(uris) and len(uris) < len(every)
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    alone = mh.audit_monitor(
        mh.MonitorInputs(mine, reference, "tfidf-lr", digest, CLASSES),
        mh.MonitorOptions(positive="depression", n_boot=100, figures=False),
    )
    windows = _windows(tmp_path / "report")
    pd.testing.assert_frame_equal(alone.table("windows").reset_index(drop=True), windows, check_dtype=False)
    assert np.array_equal(windows["n_posts"], [150] * 4)
    # a bad history is said before anything is scored or written
    for history, says in (("fortnight", "history 'fortnight'"), ("2h", "shorter than the window")):
        assert_one_sentence_failure(_monitor(work, store, tmp_path / "bad", "--history", history), says)
        assert not (tmp_path / "bad").exists()


def test_postgres_reads_the_same_history_as_sqlite(setup, tmp_path, pg_url):
    """The SQL bound on the createdAt text selects the same posts in PostgreSQL as in SQLite (offsets included)."""
    from mhaudit.audits.monitor.windows import history_start
    from mhaudit.models import load_model
    from mhaudit.weak_supervision.collect.scores import newest_scored, run_predictions, scored_posts
    from mhaudit.weak_supervision.collect.scoring import model_digest, score_posts

    work, texts = setup
    posts = _with_offsets(
        simulate_stream(texts["depression"], texts["other"], StreamConfig(n_windows=6, per_window=50, seed=13))
    )
    digest = model_digest(work / "model")
    read = {}
    for name, store in (("sqlite", _store(tmp_path / "posts.sqlite", posts)), ("postgres", _store(pg_url, posts))):
        score_posts(store, load_model, work / "model", digest)
        with PostStore(store) as s:
            newest = newest_scored(s, digest)
            since = history_start(newest, pd.Timedelta("2D"), pd.Timedelta("1D"))
            read[name] = (
                newest,
                scored_posts(s, digest, CLASSES, since),
                run_predictions(s, {"deployed": digest}, since),
            )
    assert read["sqlite"][0] == read["postgres"][0]
    pd.testing.assert_frame_equal(read["sqlite"][1], read["postgres"][1])
    pd.testing.assert_frame_equal(read["sqlite"][2], read["postgres"][2])
    assert set(_history_posts(read["sqlite"][1], "2d")["uri"]) <= set(read["sqlite"][1]["uri"])
    assert 150 <= len(read["sqlite"][1]) < 300 and len(read["sqlite"][2]) >= len(read["sqlite"][1])
