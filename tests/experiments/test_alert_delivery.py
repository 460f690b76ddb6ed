"""Alerts as records and their delivery (docs/monitor.md, "Alerts"): the status rules on small windows tables, the
post store's record on SQLite and PostgreSQL, and apprise deliveries to real receivers on 127.0.0.1 (an HTTP
server for json://, an SMTP server for mailto://)."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from mhaudit.audits.monitor import MonitorOptions
from mhaudit.audits.monitor.alerts import alert_message, alert_status, window_alerts
from mhaudit.core.errors import InputError
from mhaudit.experiments import alert_delivery
from mhaudit.experiments.alert_delivery import deliver, send_test, sinks
from mhaudit.weak_supervision.collect import alert_log
from mhaudit.weak_supervision.collect.store import PostStore
from tests.receivers import Receiver, smtp_inbox
from tests.weak_supervision.collect.pg_server import fixture_pg_server, fixture_pg_url  # noqa: F401  (fixtures)

OPTIONS = MonitorOptions(min_posts=100, psi_warn=0.10, psi_fail=0.25)


def _windows(psi: list[float], alarm: list[bool], n_posts: int = 300) -> pd.DataFrame:
    n = len(psi)
    return pd.DataFrame(
        {
            "window": [f"2026-01-{d:02d} 00:00" for d in range(1, n + 1)],
            "n_posts": [n_posts] * n,
            "em_prior_depression": np.linspace(0.15, 0.30, n),
            "em_ci_low_depression": np.linspace(0.10, 0.25, n),
            "em_ci_high_depression": np.linspace(0.20, 0.35, n),
            "psi_score": psi,
            "change_alarm": alarm,
            "cusum_z": np.arange(n, dtype=float),
            "expected_macro_f1": 0.7,
            "expected_ci_low": 0.6,
            "expected_ci_high": 0.8,
            "estimate_trusted": True,
            "untrusted_because": "",
        }
    )


def test_alerts_are_judged_windows_by_kind_with_the_window_numbers():
    table = _windows([0.05, 0.12, 0.30, 0.02], [False, False, True, False])
    table.loc[3, ["n_posts", "psi_score"]] = [50, 0.9]  # too few posts: never judged
    alerts = window_alerts(table, OPTIONS)
    assert alerts[["window", "kind", "severity"]].values.tolist() == [
        ["2026-01-02 00:00", "drift", "warn"],
        ["2026-01-03 00:00", "change", "fail"],
        ["2026-01-03 00:00", "drift", "fail"],
    ]
    assert alerts["value"].tolist() == [0.12, 2.0, 0.30]  # PSI, then the CUSUM z
    assert alerts.loc[1, "em_prevalence"] == table.loc[2, "em_prior_depression"]
    assert window_alerts(_windows([0.01] * 3, [False] * 3), OPTIONS).empty


def test_status_new_recorded_acknowledged_and_continuing():
    table = _windows([0.3, 0.3, 0.3, 0.01, 0.3], [False] * 5)
    alerts = window_alerts(table, OPTIONS)
    judged = table["window"].tolist()
    assert alert_status(alerts, None, judged).tolist() == ["new"] * 4
    recorded = pd.DataFrame({"window": [judged[0], judged[1]], "kind": "drift", "acknowledged": [True, False]})
    # day 1 acknowledged; days 2-3 fire on without a break: the same lasting shift; day 4 is quiet, so day 5 is new
    assert alert_status(alerts, recorded, judged).tolist() == ["acknowledged", "continuing", "continuing", "new"]
    recorded["acknowledged"] = False
    assert alert_status(alerts, recorded, judged).tolist() == ["recorded", "recorded", "new", "new"]
    # rows and sources in another order: the same status per alert
    shuffled = alerts.sample(frac=1, random_state=0)
    assert alert_status(shuffled, recorded, judged).sort_index().tolist() == ["recorded", "recorded", "new", "new"]


def test_the_message_has_the_numbers_and_no_text_or_author():
    alert = window_alerts(_windows([0.05, 0.31], [False, True]), OPTIONS).iloc[0].to_dict()
    title, body = alert_message(alert, model="tfidf-lr", followed="depression", report="out/report.html", sample=None)
    assert title == "mhaudit monitor: change alarm (fail) for tfidf-lr, window 2026-01-02 00:00"
    assert "Prevalence of depression among the kept posts (EM): 0.300 [0.250, 0.350]." in body
    assert "Expected macro-F1 (label-free): 0.700 [0.600, 0.800], trusted." in body
    assert "Report: out/report.html" in body and "Alert id: tfidf-lr/2026-01-02T00:00/change" in body
    assert "did:" not in body and "at://" not in body


def _with_token(receiver: Receiver) -> str:
    return receiver.url.replace("json://", "json://monitor:secret@")  # a token apprise redacts


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


def _store(target) -> PostStore:
    store = PostStore(target)
    store.commit_batch([{"uri": "at://did:plc:a/app.bsky.feed.post/1", "did": "did:plc:a", "text": "x"}], cursor=1)
    return store


def _deliver(store, alerts, targets, **kw):
    return deliver(
        store, "d" * 64, alerts, targets, model="m", followed="depression", report="r.html", samples={}, **kw
    )


def _check_the_record(store, receiver: Receiver) -> None:
    alerts = window_alerts(_windows([0.05, 0.31, 0.4], [False, True, False]), OPTIONS).assign(status="new")
    targets = sinks([_with_token(receiver)])
    alert_log.register_sinks(store, "d" * 64, [(s.key, s.label) for s in targets])
    alert_log.record_alerts(store, "d" * 64, alerts)
    done = _deliver(store, alerts, targets)
    assert (done.sent, done.failed) == (len(alerts), 0) == (3, 0)
    assert [b["title"].split(" for m, window ") for b in receiver.bodies] == [
        ["mhaudit monitor: change alarm (fail)", "2026-01-02 00:00"],
        ["mhaudit monitor: drift alarm (fail)", "2026-01-02 00:00"],
        ["mhaudit monitor: drift alarm (fail)", "2026-01-03 00:00"],
    ]
    assert _deliver(store, alerts, targets).sent == 0  # delivered once
    alert_log.record_alerts(store, "d" * 64, alerts)  # a round redone records nothing twice
    assert len(alert_log.recorded_alerts(store, "d" * 64)) == 3
    assert alert_log.acknowledge(store, "d" * 64, windows=["2026-01-03 00:00"], kind="drift") == 1
    assert alert_log.recorded_alerts(store, "d" * 64)["acknowledged"].tolist() == [False, False, True]
    # a target added later gets the alerts first seen since, not the store's history
    with Receiver() as late:
        alert_log.register_sinks(store, "d" * 64, [(s.key, s.label) for s in sinks([late.url])])
        assert _deliver(store, alerts, sinks([late.url])).sent == 0 and late.bodies == []
    rows = alert_log.deliveries(store, "d" * 64)
    assert len(rows) == 3 and rows["delivered_at"].notna().all() and (rows["attempts"] == 1).all()
    assert set(rows["sink"]) == {targets[0].label} and "secret" not in targets[0].label  # the URL is never stored


def test_the_record_on_sqlite_delivers_once_and_never_the_history(receiver, tmp_path):
    with _store(tmp_path / "posts.sqlite") as store:
        _check_the_record(store, receiver)


def test_the_record_on_postgres_delivers_once_and_never_the_history(receiver, pg_url):
    with _store(pg_url) as store:
        _check_the_record(store, receiver)


def test_a_failing_target_is_retried_with_backoff_and_never_stops_the_round(tmp_path):
    alerts = window_alerts(_windows([0.05, 0.31], [False, False]), OPTIONS).assign(status="new")
    waits: list[float] = []
    with Receiver(failures=3) as flaky, Receiver(failures=10**6) as dead:
        with _store(tmp_path / "posts.sqlite") as store:
            targets = sinks([_with_token(dead), flaky.url])
            alert_log.register_sinks(store, "d" * 64, [(s.key, s.label) for s in targets])
            alert_log.record_alerts(store, "d" * 64, alerts)
            done = _deliver(store, alerts, targets, sleep=waits.append)
            assert (done.sent, done.failed) == (1, 1)
            assert waits == [0.5, 1.0, 2.0, 0.5, 1.0, 2.0]  # 4 tries each, doubling
            assert flaky.requests == 4 and len(flaky.bodies) == 1  # 500 three times, then 200: once
            assert dead.requests == 4 and "after 4 tries" in done.failures[0] and "2026-01-02" in done.failures[0]
            assert "secret" not in done.failures[0] and "127.0.0.1" in done.failures[0]  # named without its token
            pending = alert_log.undelivered(store, "d" * 64, targets[0].key)
            assert pending == {("2026-01-02 00:00", "drift")}  # left for the next round


def test_a_url_apprise_cannot_send_to_is_one_sentence():
    with pytest.raises(InputError, match=r"--notify nosuch://… is not a URL apprise can send to"):
        sinks(["nosuch://token@host"])


def test_mailto_reaches_a_real_smtp_server():
    with smtp_inbox() as (url, inbox):
        done = send_test(sinks([url]))
        assert (done.sent, done.failed) == (1, 0)
        assert [m.rcpt_tos for m in inbox.mail] == [["team@example.org"]]
        assert b"Subject: mhaudit monitor: test message" in inbox.mail[0].content


def test_apprise_says_nothing_on_the_terminal(capfd):
    with Receiver(failures=10**6) as dead:
        alert_delivery._send(sinks([dead.url])[0], "t", "b", lambda s: None)
    assert capfd.readouterr() == ("", "")
