"""The monitor's metrics for dashboards (mhaudit.experiments.monitor_metrics) from a real round on a SYNTHETIC stream
with a planted change: every gauge read back with prometheus_client's own text parser, from the node_exporter
textfile and from a real HTTP scrape on 127.0.0.1, equals the round's windows table, options and verdicts; the
file is replaced atomically; a bad folder, a public host and a busy port are one sentence each."""

from __future__ import annotations

import http.client
import math
import os
import socket
import time

import pandas as pd
import pytest
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import mhaudit as mh
from mhaudit.core.errors import InputError
from mhaudit.experiments.monitor_metrics import (
    MetricsServer,
    alert_levels,
    check_metrics_file,
    round_metrics,
    write_metrics_file,
)
from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream
from tests.audits.test_monitor import CLASSES, _store, fixture_setup  # noqa: F401  (fixture)
from tests.experiments.test_monitor_round import runs  # noqa: F401  (fixture)

NEWEST = "2026-01-05T23:58:30Z"
NOW = pd.Timestamp("2026-01-06T00:00:00Z")  # 90 s after the newest post


@pytest.fixture(scope="module")
def result(setup, tmp_path_factory):
    """One round of the monitor on 5 days of 400 SYNTHETIC posts, the depressive share raised from day 4."""
    work, texts = setup
    tmp = tmp_path_factory.mktemp("metrics")
    posts = simulate_stream(
        texts["depression"], texts["other"], StreamConfig(n_windows=5, per_window=400, change_at=3, seed=9)
    )
    return _round(work / "model", work, _store(tmp / "posts.sqlite", posts), tmp / "out", positive="depression")


def _round(model, work, store, out, deployed=None, **options):
    """The result of one monitor round (experiments.monitor_round) on `store`."""
    done = mh.monitor_round(
        store,
        mh.load_deployment(model, deployed),
        mh.read_predictions([work / "reference.parquet"], classes=CLASSES),
        mh.MonitorOptions(n_boot=100, figures=False, **options),
        out_dir=out,
    )
    return getattr(done, "result", done)  # a Round (result, deliveries, seconds) since the alert delivery


def _samples(text: str) -> dict[str, dict[tuple, float]]:
    """Each metric's samples, keyed by their sorted (label, value) pairs, as prometheus_client's parser reads them."""
    found: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge" and family.documentation, family.name
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def _equal(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=0)


def _metrics(result, **kw) -> str:
    kw = {"round_seconds": 12.5, "newest_post": NEWEST, "deliveries": {"sent": 2, "failed": 1}, "now": NOW} | kw
    return generate_latest(round_metrics(result, **kw)).decode()


def test_the_gauges_are_the_rounds_windows_table_options_and_verdicts(result):
    metrics = _samples(_metrics(result))
    table = result.table("windows")
    windows = table["window"].tolist()
    assert len(windows) == 5 and all(name.startswith("mhaudit_monitor_") for name in metrics)
    assert "mhaudit_monitor" not in generate_latest(REGISTRY).decode()  # never the global registry

    def gauge(name: str, **labels) -> float:
        return metrics[f"mhaudit_monitor_{name}"][tuple(sorted({"model": "tfidf-lr", **labels}.items()))]

    for row in table.itertuples():
        w = row.window
        assert gauge("window_posts", window=w) == row.n_posts == 400
        assert gauge("window_start_timestamp_seconds", window=w) == pd.Timestamp(w, tz="UTC").timestamp()
        for c in CLASSES:
            assert gauge("predicted_prevalence_ratio", window=w, **{"class": c}) == getattr(row, f"predicted_{c}")
        em = {"class": "depression"}  # the EM prevalence is the positive class's
        assert gauge("em_prevalence_ratio", window=w, **em) == row.em_prior_depression
        assert gauge("em_prevalence_ci_low_ratio", window=w, **em) == row.em_ci_low_depression
        assert gauge("em_prevalence_ci_high_ratio", window=w, **em) == row.em_ci_high_depression
        assert row.em_ci_low_depression < row.em_prior_depression < row.em_ci_high_depression
        assert gauge("expected_macro_f1", window=w) == row.expected_macro_f1
        assert gauge("expected_macro_f1_ci_low", window=w) == row.expected_ci_low
        assert gauge("expected_macro_f1_ci_high", window=w) == row.expected_ci_high
        assert gauge("estimate_trusted", window=w) == float(row.estimate_trusted)
        for name in ("psi_score", "js_score", "ks_score", "cusum_z"):
            assert _equal(gauge(name, window=w), getattr(row, name)), name
        assert gauge("change_alarm", window=w) == float(row.change_alarm)
    assert [c for c in metrics["mhaudit_monitor_em_prevalence_ratio"]] == [
        (("class", "depression"), ("model", "tfidf-lr"), ("window", w)) for w in windows
    ]
    # the first three windows feed the CUSUM's start: NaN stays NaN; the alarm in the last window; the levels
    assert math.isnan(gauge("cusum_z", window=windows[0])) and gauge("change_alarm", window=windows[4]) == 1
    assert [gauge("alert_level", window=w) for w in windows] == [0, 0, 1, 1, 2]
    assert alert_levels(table, result.options) == [0, 0, 1, 1, 2]
    assert not any(k.startswith("mhaudit_monitor_ensemble") for k in metrics)  # one model: no agreement line

    assert gauge("round_scored_posts") == result.options["scored_now"] == 2000
    assert gauge("round_duration_seconds") == 12.5
    assert gauge("newest_post_lag_seconds") == 90.0
    assert gauge("newest_post_timestamp_seconds") == pd.Timestamp(NEWEST).timestamp()
    assert gauge("round_timestamp_seconds") == NOW.timestamp()
    assert gauge("alert_deliveries", outcome="sent") == 2 and gauge("alert_deliveries", outcome="failed") == 1
    severities = result.verdicts["severity"].value_counts()
    assert {s: gauge("verdicts", severity=s) for s in ("pass", "warn", "fail", "undefined")} == {
        s: float(severities.get(s, 0)) for s in ("pass", "warn", "fail", "undefined")
    }
    assert gauge("verdicts", severity="fail") >= 1
    assert gauge("psi_threshold", level="warn") == 0.10 and gauge("psi_threshold", level="fail") == 0.25
    digest = result.options["model_digest"]
    assert gauge("model_info", model_digest=digest, positive_class="depression", synthetic="false") == 1


def test_the_alert_level_follows_the_verdicts_rule():
    """2 for a change alarm or PSI >= psi_fail, 1 for PSI >= psi_warn, 0 below, and for a window too small to judge."""
    table = pd.DataFrame(
        {
            "n_posts": [400, 400, 400, 50, 400, 400],
            "psi_score": [0.05, 0.12, 0.30, 0.90, float("nan"), 0.01],
            "change_alarm": [False, False, False, False, False, True],
        }
    )
    assert alert_levels(table, {"psi_warn": 0.1, "psi_fail": 0.25, "min_posts": 100}) == [0, 1, 2, 0, 0, 2]
    assert alert_levels(table, {}) == [0, 1, 2, 0, 0, 2]  # the defaults are MonitorOptions'
    assert alert_levels(table, {"psi_warn": 0.2, "psi_fail": 0.5, "min_posts": 10}) == [0, 0, 1, 2, 0, 2]


def test_a_folder_of_runs_adds_the_agreement_line_accuracy(runs, tmp_path):  # noqa: F811  (fixture)
    work, posts = runs
    round_ = _round(
        work / "models", work, _store(tmp_path / "posts.sqlite", posts), tmp_path / "out", "run-1", min_posts=50
    )
    metrics = _samples(_metrics(round_))
    table = round_.table("windows")
    assert table["ensemble_accuracy"].notna().all()
    for row in table.itertuples():
        key = (("model", "tfidf-lr run-1"), ("window", row.window))  # the model and its deployed run
        assert metrics["mhaudit_monitor_ensemble_accuracy_ratio"][key] == row.ensemble_accuracy
        assert metrics["mhaudit_monitor_ensemble_accuracy_ci_low_ratio"][key] == row.ensemble_ci_low
        assert metrics["mhaudit_monitor_ensemble_accuracy_ci_high_ratio"][key] == row.ensemble_ci_high
        assert metrics["mhaudit_monitor_ensemble_trusted"][key] == float(row.ensemble_trusted)


def test_an_unknown_newest_post_is_nan_and_no_sink_gives_no_delivery_gauge(result):
    metrics = _samples(_metrics(result, newest_post=None, deliveries=None, now=None))
    (lag,) = metrics["mhaudit_monitor_newest_post_lag_seconds"].values()
    assert math.isnan(lag) and "mhaudit_monitor_alert_deliveries" not in metrics
    (made,) = metrics["mhaudit_monitor_round_timestamp_seconds"].values()
    assert abs(made - time.time()) < 60  # now, by default
    # an offset time is read as the instant it names; a naive one as UTC; an unreadable one is unknown
    for newest in ("2026-01-06T01:58:30+02:00", pd.Timestamp("2026-01-05 23:58:30")):
        (lag,) = _samples(_metrics(result, newest_post=newest))["mhaudit_monitor_newest_post_lag_seconds"].values()
        assert lag == 90.0
    (lag,) = _samples(_metrics(result, newest_post="yesterday"))["mhaudit_monitor_newest_post_lag_seconds"].values()
    assert math.isnan(lag)
    with pytest.raises(ValueError, match="delivery outcomes"):
        round_metrics(result, round_seconds=1, newest_post=NEWEST, deliveries={"lost": 1})


def test_the_textfile_parses_and_is_replaced_whole(result, tmp_path):
    path = write_metrics_file(round_metrics(result, round_seconds=1, newest_post=NEWEST, now=NOW), tmp_path / "m.prom")
    first = path.read_text()
    metrics = _samples(first)
    table = result.table("windows")
    em = metrics["mhaudit_monitor_em_prevalence_ratio"]
    assert len(em) == len(table) == 5  # a prevalence gauge per window and class
    for row in table.itertuples():
        assert em[(("class", "depression"), ("model", "tfidf-lr"), ("window", row.window))] == row.em_prior_depression
    # the next round's file replaces it by a rename: a reader holding the old file still reads all of it, the
    # name now holds the new one whole, and no temporary file stays in the folder
    inode = path.stat().st_ino
    with open(path) as held:
        write_metrics_file(
            round_metrics(result, round_seconds=2, newest_post=NEWEST, deliveries={"sent": 3}, now=NOW), path
        )
        assert held.read() == first
    assert path.stat().st_ino != inode and sorted(p.name for p in tmp_path.iterdir()) == ["m.prom"]
    again = _samples(path.read_text())
    assert list(again["mhaudit_monitor_round_duration_seconds"].values()) == [2.0]
    assert again["mhaudit_monitor_alert_deliveries"][(("model", "tfidf-lr"), ("outcome", "failed"))] == 0


def test_a_missing_or_unwritable_folder_is_one_sentence_and_nothing_is_written(result, tmp_path):
    registry = round_metrics(result, round_seconds=1, newest_post=NEWEST)
    with pytest.raises(InputError, match="the folder .*nowhere does not exist; create it first") as err:
        write_metrics_file(registry, tmp_path / "nowhere" / "m.prom")
    assert "\n" not in str(err.value) and not (tmp_path / "nowhere").exists()
    with pytest.raises(InputError, match="does not exist"):  # the same check, said before any round
        check_metrics_file(tmp_path / "nowhere" / "m.prom")
    assert check_metrics_file(tmp_path / "m.prom") == tmp_path / "m.prom" and not (tmp_path / "m.prom").exists()
    with pytest.raises(InputError, match="it is a folder"):
        write_metrics_file(registry, tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="does not exist"):  # a file where the folder should be
        write_metrics_file(registry, tmp_path / "file" / "m.prom")
    if os.geteuid() != 0:  # root writes into a read-only folder
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(InputError, match="is not writable"):
            write_metrics_file(registry, locked / "m.prom")
        assert list(locked.iterdir()) == []


def _get(port: int, path: str = "/metrics", host: str | None = None) -> tuple[int, str, str]:
    """A GET on 127.0.0.1 by http.client (no proxy from the environment): status, content type, body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={} if host is None else {"Host": host})
        answer = connection.getresponse()
        return answer.status, answer.getheader("Content-Type", ""), answer.read().decode()
    finally:
        connection.close()


def test_a_scrape_over_http_gives_the_latest_rounds_gauges(result):
    with MetricsServer() as server:  # 127.0.0.1, a free port; listening once made, so no wait
        assert server.url == f"http://127.0.0.1:{server.port}/metrics" and server.port > 0
        status, kind, body = _get(server.port)
        assert status == 200 and body == ""  # before the first round: no metrics yet
        server.update(round_metrics(result, round_seconds=3, newest_post=NEWEST, deliveries={"sent": 1}, now=NOW))
        status, kind, body = _get(server.port)
        assert status == 200 and kind.startswith("text/plain; version=0.0.4")
        metrics = _samples(body)
        for row in result.table("windows").itertuples():
            key = (("class", "depression"), ("model", "tfidf-lr"), ("window", row.window))
            assert metrics["mhaudit_monitor_em_prevalence_ratio"][key] == row.em_prior_depression
            assert metrics["mhaudit_monitor_em_prevalence_ci_high_ratio"][key] == row.em_ci_high_depression
        assert list(metrics["mhaudit_monitor_newest_post_lag_seconds"].values()) == [90.0]
        server.update(round_metrics(result, round_seconds=4, newest_post=NEWEST, deliveries={"sent": 2}, now=NOW))
        again = _samples(_get(server.port)[2])
        assert again["mhaudit_monitor_alert_deliveries"][(("model", "tfidf-lr"), ("outcome", "sent"))] == 2
        assert _get(server.port, "/")[0] == 404
        assert _get(server.port, host="localhost")[0] == 200
        assert _get(server.port, host="attacker.example:80")[0] == 400  # DNS rebinding: another name, refused
        port = server.port
    started = time.monotonic()
    with pytest.raises(ConnectionRefusedError):
        _get(port)
    assert time.monotonic() - started < 5


def test_a_public_host_and_a_busy_port_are_refused_in_one_sentence():
    with pytest.raises(InputError, match="refusing to serve on '0.0.0.0', which is not a loopback address") as err:
        MetricsServer("0.0.0.0", 0)
    assert "\n" not in str(err.value)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(InputError, match=f"cannot listen on 127.0.0.1:{port} .*; pick another") as err:
            MetricsServer(port=port)
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)
    with pytest.raises(InputError, match="not a port number"):
        MetricsServer(port=70000)
    with MetricsServer(public=True) as server:  # public: any Host header is answered
        assert _get(server.port, host="monitor.example:9108")[0] == 200
