"""The annotation app under load (issue 32): a real `mhaudit annotate` process on 127.0.0.1, three annotators
labelling 300 items each over HTTP at once, and a fourth in a real headless Chromium at the same time; then
the same with the server killed (SIGKILL) at a seeded moment and restarted on the same store.

The study: the app takes any number of annotators and reports kappa for every pair, so the three HTTP clients
are three annotators (alice, bob, dan) who each label the whole sample, and the browser is a fourth, erin,
who labels the first BROWSER_ITEMS items of her own order through the keyboard. (The adjudicator's writes
under concurrency are covered by test_consensus_checks_and_writes_under_one_lock.)
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd

from mhaudit.audits.agreement import AgreementInputs, AgreementOptions, audit_agreement
from mhaudit.tables.label_store import LabelStore
from mhaudit.weak_supervision.annotate import load_sample, open_session
from tests.weak_supervision.annotate.served import (
    WEAK,
    Annotator,
    Served,
    human_rows,
    run_all,
    write_study,
)

N_ITEMS = 300
BROWSER_ITEMS = 20
HTTP_ANNOTATORS = ("alice", "bob", "dan")
EVERYONE = [*HTTP_ANNOTATORS, "erin"]
COMPARED = ["item_id", "task", "labeler", "kind", "value", "tags", "note"]


class Browser:
    """erin in Chromium: opens her link and answers with the keys 1 / 0, as a person does."""

    def __init__(self, driver, link: str, answers: dict[str, int]):
        self.driver, self.link, self.answers = driver, link, answers
        self.acked: dict[str, int] = {}
        self.asked_again: list[str] = []
        self.outages = 0

    def _page(self) -> dict[str, str] | None:
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.common.by import By

        try:
            if self.driver.execute_script("return document.readyState") != "complete":
                return None
            body = self.driver.find_element(By.TAG_NAME, "body")
            return {
                "page": body.get_attribute("data-page") or "",
                "item": body.get_attribute("data-item-id") or "",
                "status": self.driver.find_element(By.ID, "status").text
                if body.get_attribute("data-page") == "item"
                else "",
            }
        except WebDriverException:
            return None

    def _open(self, timeout: float) -> None:
        """Open the personal link until the server answers (after a kill: until it is back)."""
        from selenium.common.exceptions import WebDriverException

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                self.driver.get(self.link)
            except WebDriverException:
                pass
            page = self._page()
            if page and page["page"] in ("item", "done"):
                return
            time.sleep(0.1)
        raise AssertionError("the browser could not reopen its link")

    def label(self, n_items: int, timeout: float = 120) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        self._open(timeout)
        while len(self.acked) < n_items:
            page = self._page()
            item_id = page["item"]
            if item_id in self.acked:
                self.asked_again.append(item_id)
            old_url = self.driver.current_url
            ActionChains(self.driver).send_keys(str(self.answers[item_id])).perform()
            end = time.monotonic() + 60  # a bound on the wait for the page to change (a busy machine is slow)
            while time.monotonic() < end:  # saved: the script goes to the next page only on a 2xx
                if self.driver.current_url != old_url:
                    self.acked[item_id] = self.answers[item_id]
                    break
                page = self._page()
                if page and page["status"].startswith("NOT SAVED"):
                    break
                time.sleep(0.02)
            loaded = self._page()
            while time.monotonic() < end and not (loaded and loaded["page"] == "item" and loaded["item"] != item_id):
                time.sleep(0.02)
                loaded = self._page()
            if not (loaded and loaded["page"] == "item" and self.driver.current_url != old_url):
                self.outages += 1  # the save or the next page failed: reopen the link, as a person would
                self._open(timeout)


def _catch(failed: list, fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as exc:  # reported by the test, not lost in the thread
        failed.append(exc)


def serial_store(tmp_path, sample, answers: dict[str, dict[str, int]], name: str) -> pd.DataFrame:
    """The same answers given one at a time, through the same app code, into a fresh store."""
    labels = tmp_path / name / "labels.sqlite"
    labels.parent.mkdir()
    items = load_sample(sample)
    with LabelStore(labels) as store:
        store.add(
            [
                {"item_id": i.item_id, "task": "mh", "labeler": WEAK, "kind": "llm", "value": v}
                for i, v in zip(items, weak_values(tmp_path / "labels.sqlite", items), strict=True)
            ]
        )
    session = open_session(sample, labels, EVERYONE, port=0)
    try:
        people = {p.name: p for p in session.people}
        for person, given in answers.items():
            for item_id, value in given.items():
                session.app.save_label(
                    people[person], {"item_id": item_id, "task": "mh", "value": value, "elapsed_ms": 1000}, "/s/x/"
                )
        return session.store.frame()
    finally:
        session.close()


def weak_values(labels, items) -> list[int]:
    with LabelStore(labels) as store:
        weak = store.frame(labeler=WEAK).set_index("item_id")["value"]
    return [int(weak[i.item_id]) for i in items]


def report_tables(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    report = audit_agreement(AgreementInputs(frame), AgreementOptions("mh", weak_labeler=WEAK, n_boot=200, seed=0))
    return {name: report.table(name) for name in ("human_agreement", "weak_vs_reference")}


def assert_same_report(concurrent: pd.DataFrame, serial: pd.DataFrame) -> dict[str, pd.DataFrame]:
    key = ["labeler", "item_id"]
    pd.testing.assert_frame_equal(
        concurrent[COMPARED].sort_values(key).reset_index(drop=True),
        serial[COMPARED].sort_values(key).reset_index(drop=True),
    )
    ours, theirs = report_tables(concurrent), report_tables(serial)
    for name in ours:
        pd.testing.assert_frame_equal(ours[name], theirs[name], check_exact=True)
    return ours


def check_stored(labels, given: dict[str, dict[str, int]]) -> pd.DataFrame:
    """Every acknowledged answer is in the store once, with its value, and nothing else is."""
    human = human_rows(labels)
    assert not human.duplicated(["labeler", "item_id"]).any()
    stored = {(r.labeler, r.item_id): int(r.value) for r in human.itertuples()}
    expected = {(name, item): value for name, answers in given.items() for item, value in answers.items()}
    assert stored == expected
    return human


def test_three_annotators_and_a_browser_at_once(tmp_path, open_browser):
    sample, labels, answers = write_study(tmp_path, N_ITEMS, seed=32)
    served = Served(sample, labels, EVERYONE).start()
    started = time.monotonic()
    try:
        clients = [Annotator(name, served.links[name], answers[name], seed=i) for i, name in enumerate(HTTP_ANNOTATORS)]
        browser = Browser(open_browser(1000, 800), served.links["erin"], answers["erin"])
        failed: list[BaseException] = []
        labelling = threading.Thread(target=lambda: _catch(failed, browser.label, BROWSER_ITEMS), daemon=True)
        labelling.start()
        while not browser.acked and labelling.is_alive():  # Chromium's start-up is not part of the overlap
            time.sleep(0.02)
        at_start = len(browser.acked)
        threads = run_all(clients, seconds=300)  # bounds that only stop a hang: they finish in 10-40 s
        for thread in threads:
            thread.join(300)
        at_end = len(browser.acked)  # the browser's answers while the HTTP annotators were at work: the rest
        labelling.join(300)
        elapsed = time.monotonic() - started
    finally:
        served.stop()
    assert served.process.returncode == 0 and not any("Traceback" in line for line in served.stderr)
    for client in clients:
        assert client.errors == [] and client.asked_again == []
        assert len(client.order) == N_ITEMS == len(set(client.order))  # every item once, in one pass
    assert browser.outages == 0 and browser.asked_again == [] and len(browser.acked) == BROWSER_ITEMS
    assert failed == [] and at_start < BROWSER_ITEMS and at_end > at_start, (
        f"no overlap: the browser gave {at_end - at_start} answers while the HTTP annotators were at work"
    )
    given = {c.name: c.acked for c in clients} | {"erin": browser.acked}
    human = check_stored(labels, given)
    assert len(human) == 3 * N_ITEMS + BROWSER_ITEMS == 920
    with LabelStore(labels) as store:
        concurrent = store.frame()
    tables = assert_same_report(concurrent, serial_store(tmp_path, sample, given, "serial"))
    pairs = tables["human_agreement"]
    kappas = dict(zip(pairs["annotator_a"] + "-" + pairs["annotator_b"], pairs["kappa"].round(3), strict=True))
    # four annotators, six pairs; erin's pairs on her 20 items (the answers are seeded, so the kappas are fixed)
    assert kappas == {
        "alice-bob": 0.496,
        "alice-dan": 0.425,
        "alice-erin": 0.7,
        "bob-dan": 0.44,
        "bob-erin": 0.5,
        "dan-erin": 0.1,
    }, kappas
    print(f"\n920 answers from 4 annotators at once in {elapsed:.1f} s; kappa per pair {kappas}")


def test_server_killed_while_they_label_and_restarted(tmp_path, open_browser):
    sample, labels, answers = write_study(tmp_path, N_ITEMS, seed=33)
    rng = np.random.default_rng(3232)
    kill_at = int(rng.integers(150, 600))  # acknowledged answers (of the three HTTP annotators) before the kill
    served = Served(sample, labels, EVERYONE).start()
    snapshot: dict[str, dict[str, int]] = {}
    stored_after_kill: dict[tuple[str, str], int] = {}
    try:
        clients = [
            Annotator(name, served.links[name], answers[name], seed=10 + i) for i, name in enumerate(HTTP_ANNOTATORS)
        ]
        browser = Browser(open_browser(1000, 800), served.links["erin"], answers["erin"])

        def killer() -> None:
            while sum(len(c.order) for c in clients) < kill_at:
                time.sleep(0.002)
            served.kill()
            time.sleep(0.5)  # replies that left the server before the kill reach their clients
            snapshot.update({c.name: dict(c.acked) for c in clients} | {"erin": dict(browser.acked)})
            stored_after_kill.update({(r.labeler, r.item_id): int(r.value) for r in human_rows(labels).itertuples()})
            served.start()

        threads = run_all(clients, seconds=300)  # bounds that only stop a hang: they finish in 10-40 s
        kill_thread = threading.Thread(target=killer, daemon=True)
        kill_thread.start()
        browser.label(BROWSER_ITEMS, timeout=120)
        kill_thread.join(300)
        for thread in threads:
            thread.join(300)
    finally:
        served.stop()
    assert served.starts == 2 and snapshot, "the server was not killed and restarted"
    acked_before = {(name, item): value for name, acked in snapshot.items() for item, value in acked.items()}
    assert len(acked_before) >= kill_at
    missing = {key for key in acked_before if stored_after_kill.get(key) != acked_before[key]}
    assert missing == set(), f"{len(missing)} acknowledged answers lost"
    for client in clients:
        assert client.errors == [] and client.asked_again == []
        # each resumed at its next item: right after its last acknowledged one, or one further when the answer
        # in flight at the kill was stored (then never asked again, so never acknowledged)
        for done, position, in_flight in client.resumes:
            assert int(position) in (done + 1, done + 2) if in_flight else int(position) == done + 1, client.resumes
        skipped = sum(int(position) == done + 2 for done, position, _ in client.resumes)
        assert len(client.order) + skipped == N_ITEMS and len(set(client.order)) == len(client.order)
    assert sum(len(c.resumes) for c in clients) == len(HTTP_ANNOTATORS)  # each saw the outage once
    assert browser.asked_again == [] and len(browser.acked) == BROWSER_ITEMS
    # the answers in flight at the kill that were stored without an acknowledgement were not asked again, so
    # the store holds the acknowledged answers plus those
    given = {c.name: c.acked for c in clients} | {"erin": browser.acked}
    human = human_rows(labels)
    extra = {(r.labeler, r.item_id) for r in human.itertuples()} - {(n, i) for n, a in given.items() for i in a}
    in_flight_stored = {
        (c.name, item) for c in clients for done, position, item in c.resumes if int(position) == done + 2
    }
    assert in_flight_stored <= extra and {name for name, _ in extra - in_flight_stored} <= {"erin"}
    assert len(extra) <= len(EVERYONE)
    for name, item in extra:
        given[name][item] = answers[name][item]
    check_stored(labels, given)
    with LabelStore(labels) as store:
        concurrent = store.frame()
    assert_same_report(concurrent, serial_store(tmp_path, sample, given, "serial"))
    print(
        f"\nkilled after {kill_at} acknowledged answers ({len(acked_before)} with the browser's); lost 0; "
        f"stored in flight without an acknowledgement: {len(extra)}; browser outages: {browser.outages}"
    )


def test_the_app_syncs_every_answer_to_disk(tmp_path):
    """The 2xx means "on disk": the app's store commits with synchronous=FULL (2), not the default NORMAL (1)."""
    sample, labels, _ = write_study(tmp_path, 5, seed=1)
    session = open_session(sample, labels, ["alice", "bob"], port=0)
    try:
        assert session.store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        session.close()
    with LabelStore(labels) as store:
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 1
