"""The monitor's alerts end to end on real posts (issue 45, "Done when"): SYNTHETIC-MIXTURE streams of real Bluesky
posts replayed through a local relay, collected by `mhaudit collect bluesky`, monitored by `mhaudit audit monitor`
with a TF-IDF model trained on Depression Reddit, the alerts delivered to real receivers on 127.0.0.1 (an HTTP
server for json://, an SMTP server for mailto://).

SYNTHETIC-MIXTURE: every post is a real post of the Bluesky depression set (its `depressive` column is the human
label), but the streams are planted mixtures: each day draws posts from the set at a chosen depressive share and
gives them new createdAt times spread over that day. The planted stream is 15% depressive on days 1-7 and 30% from
day 8; the null stream is 15% on all 14 days. The reference (the model's predictions on a validated labelled
sample, 15% depressive) and the two streams draw from disjoint posts, so no post of one is in another; the set has
~500 depressive posts, so a day's depressive posts are drawn with replacement from its stream's ~200 (repeats get
their own createdAt, hence their own post ids).

Why PER_DAY posts a day: the model, trained on Reddit, tells Bluesky's depressive posts from the rest weakly (mean
calibrated probability 0.19 against 0.14), so doubling the share moves each window's mean probability by only
~0.007 and the CUSUM needs volume to see it within a day or two. Simulated over 200 seeds with this model and
reference (the detector and the windows' PSI on resampled days): the first alarm after the change came on day 8 or
9 in 26% of streams at 1,000 posts a day, 74% at 2,000, 92% at 3,000 and 98% at 4,000, with no alarm before day 8
and at most 1 in 200 null streams alarming; the null windows' score PSI stays near 0.015, far below 0.10.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax
from typer.testing import CliRunner

from mhaudit.cli import app
from mhaudit.weak_supervision.collect.collector import PostFilter
from mhaudit.weak_supervision.collect.replay import ReplayRelay
from mhaudit.weak_supervision.collect.store import PostStore
from mhaudit.weak_supervision.lexicons import Lexicon
from tests.audits.test_monitor_replay import COMMON, reddit_model
from tests.conftest import data_dir
from tests.receivers import WAIT_S, Receiver, smtp_inbox

runner = CliRunner()
DAYS, CHANGE_DAY, PER_DAY = 14, 8, 3000
FIRST_DAY = pd.Timestamp("2025-03-01", tz="UTC")


def _day(number: int) -> str:
    """The window label of day `number` (1-based), as the report prints it."""
    return (FIRST_DAY + pd.Timedelta(days=number - 1)).strftime("%Y-%m-%d %H:%M")


@dataclass(frozen=True)
class Streams:
    folder: Path
    model: Path
    reference: Path
    planted: Path  # the collected post stores, never monitored themselves: tests monitor copies
    null: Path
    texts: frozenset[str]  # every stream post's text
    truth: pd.DataFrame  # per stream and day: posts and the depressive share

    def copy(self, which: str, to: Path) -> Path:
        to.mkdir(parents=True, exist_ok=True)
        shutil.copy(getattr(self, which), to / "posts.sqlite")
        return to / "posts.sqlite"

    def monitor_args(self, store: Path, out: Path, *extra: str) -> list[str]:
        return [
            "audit",
            "monitor",
            "--store",
            str(store),
            "--model",
            str(self.model),
            "--reference",
            str(self.reference),
            "--window",
            "1d",
            "--out",
            str(out),
            *extra,
        ]


def _mixture(pool_dep: pd.DataFrame, pool_other: pd.DataFrame, shares: list[float], rng) -> pd.DataFrame:
    """SYNTHETIC-MIXTURE: PER_DAY real posts a day at each day's depressive share, createdAt spread over the day."""
    days = []
    for day, share in enumerate(shares):
        k = round(share * PER_DAY)
        picked = pd.concat(
            [
                pool_dep.sample(k, replace=k > len(pool_dep), random_state=rng.integers(2**31)),
                pool_other.sample(PER_DAY - k, replace=PER_DAY - k > len(pool_other), random_state=rng.integers(2**31)),
            ]
        ).sample(frac=1, random_state=rng.integers(2**31))
        times = (
            FIRST_DAY + pd.Timedelta(days=day) + pd.to_timedelta(np.sort(rng.integers(0, 86_400_000, PER_DAY)), "ms")
        )
        days.append(
            pd.DataFrame(
                {
                    "text": picked["text"].to_numpy(),
                    "createdAt": times.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z",  # as Bluesky writes it
                    "depressive": picked["depressive"].to_numpy(),
                    "day": day + 1,
                }
            )
        )
    return pd.concat(days, ignore_index=True)


def _collect(table: Path, store: Path, lexicon: Path, expected: int) -> None:
    """`mhaudit collect replay`'s relay (here 0.1 ms of wall clock a post rather than 1 ms, for 42,000 posts) and
    `mhaudit collect bluesky` into `store`."""
    with ReplayRelay.from_file(table, step_us=100) as relay:
        r = runner.invoke(
            app,
            ["collect", "bluesky", "--db", str(store), "--relay", relay.url, "--lexicon", str(lexicon)]
            + ["--max-posts", str(expected), "--duration", "300s"],
        )
    assert r.exit_code == 0, r.output
    with PostStore(store) as posts:
        assert posts.count() == expected


@pytest.fixture(scope="module")
def replayed_streams(tmp_path_factory) -> Streams:

    folder = tmp_path_factory.mktemp("alerts-real")
    raw = pd.read_csv(data_dir("bluesky_depression") / "bluesky-depression-dataset.csv")
    raw = raw.assign(text=raw["text"].astype(str))
    lexicon = folder / "common.toml"
    lexicon.write_text(COMMON)
    keeps = PostFilter([Lexicon.load(str(lexicon))])
    # the posts the collection keeps (nearly all), so a stream's planted share is the share among the kept posts
    kept = raw[
        [
            keeps({"uri": "at://x/p/1", "did": "x", "langs": ["en"], "text": t, "reply": False}) is not None
            for t in raw.text
        ]
    ].drop_duplicates("text")
    depressive = kept[kept["depressive"] == 1].sample(frac=1, random_state=1)
    other = kept[kept["depressive"] == 0].sample(frac=1, random_state=2)
    n_ref = 90  # the validated sample: 90 depressive and 510 other posts, 15%
    reference, depressive, other = (
        pd.concat([depressive[:n_ref], other[: n_ref * 85 // 15]]),
        depressive[n_ref:],
        other[n_ref * 85 // 15 :],
    )
    rng = np.random.default_rng(45)
    planted = _mixture(depressive[::2], other[::2], [0.15] * (CHANGE_DAY - 1) + [0.30] * (DAYS - CHANGE_DAY + 1), rng)
    null = _mixture(depressive[1::2], other[1::2], [0.15] * DAYS, rng)

    model = reddit_model(folder / "model")
    classes = model.classes  # no_depression, depression
    probs = softmax(model.predict_logits(reference["text"].tolist()), axis=1)
    pd.DataFrame(  # no model column: the deployed model's predictions
        {
            "label": reference["depressive"].map({0: classes[0], 1: classes[1]}).to_numpy(),
            **{f"prob_{c}": probs[:, i] for i, c in enumerate(classes)},
        }
    ).to_csv(folder / "reference.csv", index=False)

    for name, stream in (("planted", planted), ("null", null)):
        stream[["text", "createdAt"]].to_csv(folder / f"{name}.csv", index=False)  # as people publish posts
        _collect(folder / f"{name}.csv", folder / f"{name}.sqlite", lexicon, len(stream))
    truth = pd.concat([planted.assign(stream="planted"), null.assign(stream="null")])
    return Streams(
        folder,
        folder / "model",
        folder / "reference.csv",
        folder / "planted.sqlite",
        folder / "null.sqlite",
        frozenset(truth["text"]),
        truth.groupby(["stream", "day"])["depressive"].agg(["size", "mean"]),
    )


def _windows(out: Path) -> pd.DataFrame:
    report = json.loads((out / "report.json").read_text())
    return pd.DataFrame(report["sections"][0]["tables"]["windows"])


def _alerts(out: Path) -> pd.DataFrame:
    report = json.loads((out / "report.json").read_text())
    tables = [s["tables"]["alerts"] for s in report["sections"] if "alerts" in s["tables"]]
    return pd.DataFrame(tables[0] if tables else [])


@dataclass
class PlantedRound:
    store: Path
    out: Path
    receiver: Receiver
    exit_code: int
    output: str
    windows: pd.DataFrame  # the first round's windows table, before the second round rewrites the report


@pytest.fixture(scope="module")
def planted_round(replayed_streams, tmp_path_factory):
    """The monitor's first round on (a copy of) the planted stream, delivering to a healthy json:// receiver."""
    folder = tmp_path_factory.mktemp("planted-round")
    store, out = replayed_streams.copy("planted", folder), folder / "monitor"
    with Receiver() as receiver:
        args = ["--notify", receiver.url, "--metrics-file", str(folder / "metrics.prom"), "--fail-on", "fail"]
        r = runner.invoke(app, replayed_streams.monitor_args(store, out, *args))
        yield PlantedRound(store, out, receiver, r.exit_code, r.output, _windows(out))


def test_planted_change_is_delivered_for_its_window_once_and_never_before(replayed_streams, planted_round):
    run, streams = planted_round, replayed_streams
    assert run.exit_code == 1, run.output  # --fail-on fail: the change alarm is a failing verdict
    assert "a verdict is at fail or worse (--fail-on fail): exit 1" in run.output
    windows = run.windows.set_index("window")
    truth = streams.truth.loc["planted"]
    assert windows["n_posts"].tolist() == truth["size"].tolist() == [PER_DAY] * DAYS
    print(
        "planted windows:\n"
        + windows.assign(truth=truth["mean"].to_numpy())[
            ["truth", "predicted_depression", "em_prior_depression", "em_ci_low_depression", "em_ci_high_depression"]
            + ["mean_posterior_depression", "psi_score", "cusum_z", "change_alarm"]
        ].to_string()
    )
    delivered = run.receiver.alerts()
    assert len(delivered) == len(set(delivered)) >= 1  # each (window, kind) once
    assert min(w for w, _ in delivered) in (_day(CHANGE_DAY), _day(CHANGE_DAY + 1))  # the change's window or next
    assert "change" in {k for _, k in delivered} and all(w >= _day(CHANGE_DAY) for w, _ in delivered)
    alarms = windows.index[windows["change_alarm"].astype(bool)].tolist()
    assert alarms[0] in (_day(CHANGE_DAY), _day(CHANGE_DAY + 1))
    assert windows.loc[: _day(CHANGE_DAY - 1), "psi_score"].max() < 0.10  # nothing before the change
    # the messages: the window, the EM prevalence with its CI, the report's path; no post text, no author
    for body, (window, kind) in zip(run.receiver.bodies, delivered):
        w = windows.loc[window]
        assert body["title"].endswith(f"for tfidf-lr, window {window}") and f"{kind} alarm" in body["title"]
        prevalence = (
            f"Prevalence of depression among the kept posts (EM): {w['em_prior_depression']:.3f} "
            f"[{w['em_ci_low_depression']:.3f}, {w['em_ci_high_depression']:.3f}]."
        )
        assert prevalence in body["message"], body["message"]
        assert f"Report: {run.out / 'report.html'}" in body["message"]
        text = json.dumps(body)
        assert "did:" not in text and "at://" not in text
        # a post of a few characters ("4/4") could be part of any sentence; longer ones cannot by chance
        assert not any(t in text for t in streams.texts if len(t) >= 12)
    # the same store again, nothing new: nothing is delivered, the verdict still fails
    sent = run.receiver.requests
    again = runner.invoke(
        app, streams.monitor_args(run.store, run.out, "--notify", run.receiver.url, "--fail-on", "fail")
    )
    assert again.exit_code == 1, again.output
    assert run.receiver.requests == sent
    assert set(_alerts(run.out)["status"]) == {"recorded"} and "NEW" not in again.output
    assert "14 of 14 windows computed" in run.output and "0 of 14 windows computed" in again.output


def test_metrics_file_holds_prevalence_per_window_and_class(planted_round):
    from prometheus_client.parser import text_string_to_metric_families

    families = {
        f.name: f for f in text_string_to_metric_families((planted_round.out.parent / "metrics.prom").read_text())
    }
    windows = planted_round.windows.set_index("window")

    def by_window(name: str, cls: str) -> dict[str, float]:
        return {s.labels["window"]: s.value for s in families[name].samples if s.labels.get("class") == cls}

    em = by_window("mhaudit_monitor_em_prevalence_ratio", "depression")
    assert em == pytest.approx(windows["em_prior_depression"].to_dict()) and len(em) == DAYS
    assert by_window("mhaudit_monitor_em_prevalence_ci_low_ratio", "depression") == pytest.approx(
        windows["em_ci_low_depression"].to_dict()
    )
    for cls in ("no_depression", "depression"):
        assert by_window("mhaudit_monitor_predicted_prevalence_ratio", cls) == pytest.approx(
            windows[f"predicted_{cls}"].to_dict()
        )
    assert {s.labels["model"] for f in families.values() for s in f.samples if "model" in s.labels} == {"tfidf-lr"}


def test_null_stream_delivers_nothing_and_passes(replayed_streams, tmp_path):
    store = replayed_streams.copy("null", tmp_path)
    with Receiver() as receiver:
        args = ["--notify", receiver.url, "--fail-on", "fail"]
        r = runner.invoke(app, replayed_streams.monitor_args(store, tmp_path / "monitor", *args))
        windows = _windows(tmp_path / "monitor")
        shown = [
            "window",
            "em_prior_depression",
            "em_ci_low_depression",
            "em_ci_high_depression",
            "psi_score",
            "cusum_z",
        ]
        print("null windows:\n" + windows[shown].to_string())
        assert r.exit_code == 0, r.output
        assert receiver.requests == 0 and _alerts(tmp_path / "monitor").empty
        assert not windows["change_alarm"].any() and windows["psi_score"].max() < 0.10


def _monitor_process(streams: Streams, store: Path, out: Path, receiver: Receiver) -> subprocess.Popen:
    args = streams.monitor_args(store, out, "--notify", receiver.url, "--fail-on", "fail")
    env = dict(os.environ, OMP_NUM_THREADS="1", COLUMNS="200")  # MHAUDIT_SECRET: tests/conftest sets it
    return subprocess.Popen(
        [sys.executable, "-m", "mhaudit", *args], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


def _store_state(streams: Streams, store: Path) -> tuple[int, pd.DataFrame, pd.DataFrame]:
    """The store's posts the model has not scored, its recorded alerts and their deliveries."""
    from mhaudit.weak_supervision.collect import alert_log
    from mhaudit.weak_supervision.collect.scores import pending_posts
    from mhaudit.weak_supervision.collect.scoring import model_digest

    digest = model_digest(streams.model)
    with PostStore(store, create=False) as posts:
        pending = len(pending_posts(posts, digest))
        return pending, alert_log.recorded_alerts(posts, digest), alert_log.deliveries(posts, digest)


@pytest.mark.parametrize("kill_at", ["scored", "delivering"])
def test_kill_9_mid_round_then_restart_delivers_the_alert_exactly_once(replayed_streams, tmp_path, kill_at):
    """`scored`: killed once the round's new posts are scored (its stderr says "done score new posts"), before
    its alert is recorded; `delivering`: killed while the alert's message is in flight (the receiver holds it
    unanswered, then refuses it), after the alert is recorded and before its delivery is."""
    store, out = replayed_streams.copy("planted", tmp_path), tmp_path / "monitor"
    with Receiver(hold=kill_at == "delivering") as receiver:
        first = _monitor_process(replayed_streams, store, out, receiver)
        watchdog = threading.Timer(WAIT_S, first.kill)  # only stops a hang
        watchdog.start()
        try:
            if kill_at == "scored":
                seen = []
                for line in first.stderr:  # the event: the stage line; kill at once
                    seen.append(line)
                    if re.search(r"done\s+score new posts", line):
                        break
                assert re.search(r"done\s+score new posts", seen[-1]), "".join(seen)
            else:
                receiver.wait_for_requests(1)
            first.send_signal(signal.SIGKILL)
            assert first.wait(WAIT_S) == -signal.SIGKILL
        finally:
            watchdog.cancel()
            first.kill()
            first.communicate()
        pending, recorded, tried = _store_state(replayed_streams, store)
        assert pending == 0  # every post's scores were committed before the kill
        if kill_at == "scored":
            assert recorded.empty and tried.empty  # killed before the alert was recorded
        else:  # recorded, its delivery not: the kill came between
            assert recorded["kind"].tolist() == ["change"] and tried.empty and receiver.bodies == []
        receiver.hold = False
        receiver.release.set()  # the held request is refused now: it was never accepted
        again = _monitor_process(replayed_streams, store, out, receiver)
        stdout, stderr = again.communicate(timeout=600)
        assert again.returncode == 1, stdout + stderr
        delivered = receiver.alerts()
        assert len(delivered) >= 1 and {d: delivered.count(d) for d in delivered} == dict.fromkeys(delivered, 1)
        assert min(w for w, _ in delivered) in (_day(CHANGE_DAY), _day(CHANGE_DAY + 1))
        _, recorded, tried = _store_state(replayed_streams, store)
        assert sorted(zip(recorded["window"], recorded["kind"])) == sorted(delivered)
        assert tried["delivered_at"].notna().all() and len(tried) == len(delivered)
        # the killed round may have written the sample already: the message still names it
        assert all("posts to label in" in body["message"] for body in receiver.bodies), receiver.bodies


def test_a_sink_failing_three_times_gets_each_alert_once_and_the_windows_are_unchanged(
    replayed_streams, planted_round, tmp_path
):
    store, out = replayed_streams.copy("planted", tmp_path), tmp_path / "monitor"
    with Receiver(failures=3) as receiver:
        r = runner.invoke(app, replayed_streams.monitor_args(store, out, "--notify", receiver.url, "--fail-on", "fail"))
        assert r.exit_code == 1, r.output
        delivered = receiver.alerts()
        assert delivered == planted_round.receiver.alerts()  # the healthy run's alerts, each once
        assert receiver.requests == 3 + len(delivered)  # 500 three times, then each alert once
    alerts = _alerts(out)
    assert alerts["delivered"].tolist() == [1] * len(alerts)
    _, _, tried = _store_state(replayed_streams, store)
    assert tried["attempts"].tolist()[:1] == [4] and tried["last_error"].isna().all()  # the 4th try got through
    healthy = planted_round.windows
    pd.testing.assert_frame_equal(_windows(out), healthy)  # the windows table holds no timing


def test_notify_test_and_a_mailto_alert_reach_real_receivers(replayed_streams, tmp_path):
    with Receiver() as receiver:
        r = runner.invoke(
            app,
            replayed_streams.monitor_args(
                tmp_path / "none.sqlite", tmp_path / "out", "--notify", receiver.url, "--notify-test"
            ),
        )
        assert r.exit_code == 0, r.output
        assert "test messages: 1 delivered, 0 failed" in r.output
        assert receiver.requests == 1 and receiver.bodies[0]["title"] == "mhaudit monitor: test message"
        assert sorted(tmp_path.iterdir()) == []  # it sends and stops: no store, no report

    with smtp_inbox() as (url, inbox):
        store = replayed_streams.copy("planted", tmp_path)
        r = runner.invoke(app, replayed_streams.monitor_args(store, tmp_path / "monitor", "--notify", url))
        assert r.exit_code == 0, r.output  # no --fail-on: the alarm is reported, the exit is 0
        assert [m.rcpt_tos for m in inbox.mail] == [["team@example.org"]] * len(inbox.mail) and len(inbox.mail) >= 1
        subjects = [re.search(rb"Subject: ([^\r\n]*)", m.content).group(1).decode() for m in inbox.mail]
        assert any(s.startswith("mhaudit monitor: change alarm (fail) for tfidf-lr") for s in subjects), subjects


def test_a_missing_store_and_another_models_reference_are_one_sentence(replayed_streams, tmp_path):
    missing, out = tmp_path / "post.sqlite", tmp_path / "monitor"
    r = runner.invoke(app, replayed_streams.monitor_args(missing, out))
    assert r.exit_code == 2
    assert "no such post store" in r.output and r.output.count("error:") == 1 and "Traceback" not in r.output
    assert not missing.exists() and not out.exists() and sorted(tmp_path.iterdir()) == []

    other = tmp_path / "char-reference.csv"
    pd.read_csv(replayed_streams.reference).assign(model="char-tfidf-lr").to_csv(other, index=False)
    store = replayed_streams.copy("planted", tmp_path / "store")
    args = replayed_streams.monitor_args(store, out)
    args[args.index("--reference") + 1] = str(other)
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and r.output.count("error:") == 1
    assert "the reference predictions were made by char-tfidf-lr, not by the deployed model tfidf-lr" in r.output
    assert "Traceback" not in r.output and not out.exists()
