"""The annotation app over real HTTP on 127.0.0.1 (port 0), then in a real headless Chromium (Selenium)."""

from __future__ import annotations

import json
from urllib.parse import urlsplit
import os
import socket
import stat
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from mhaudit.audits.agreement import AgreementInputs, AgreementOptions, audit_agreement
from mhaudit.core.errors import InputError
from mhaudit.tables.label_store import LabelStore
from mhaudit.weak_supervision.annotate import TAGS, build_cases, load_sample, open_session, tokens_path

TEXTS = {
    "p1": "third panic attack this week, I can't breathe <b>in</b> the supermarket",
    "p2": "It's awareness week: check on your friends <script>alert('x')</script>",
    "p3": "this spreadsheet makes me want to scream & cry",
    "p4": "my brother has been so depressed since he lost his job",
}
# Things an annotator must never see: the weak label (stratum), the LLM's labels, the other annotator.
SECRETS = ("WEAKPOS", "WEAKNEG", "LLMSAYS", "smollm2")


@pytest.fixture
def sample(tmp_path) -> Path:
    path = tmp_path / "sample.parquet"
    pd.DataFrame(
        {
            "item_id": list(TEXTS),
            "task": "mh",
            "text": list(TEXTS.values()),
            "stratum": ["WEAKPOS", "WEAKNEG", "WEAKPOS", "WEAKNEG"],
            "platform": "bluesky",
        }
    ).to_parquet(path)
    with LabelStore(tmp_path / "labels.sqlite") as store:  # the weak labeler's answers are in the same store
        store.add(
            [
                {
                    "item_id": i,
                    "task": "mh",
                    "labeler": "smollm2",
                    "kind": "llm",
                    "value": 1,
                    "raw_answer": f"LLMSAYS-{i}",
                }
                for i in TEXTS
            ]
        )
    return path


@pytest.fixture
def session(tmp_path, sample):
    notes: list[str] = []
    s = open_session(
        sample, tmp_path / "labels.sqlite", ["alice", "bob"], "carol", port=0, notify=notes.append
    ).start_background()
    s.notes = notes
    yield s
    s.close()


def links(session) -> dict[str, str]:
    return {person.name: url for person, url in session.urls().items()}


def token_of(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[1]


def post(url: str, payload: dict, **kw) -> httpx.Response:
    return httpx.post(url, json=payload, **kw)


def label(session, name: str, item_id: str, value, **extra) -> httpx.Response:
    url = links(session)[name]
    return post(url + "api/label", {"token": token_of(url), "item_id": item_id, "task": "mh", "value": value, **extra})


def positions(session) -> dict[str, int]:
    return {item.item_id: item.position for item in session.app.items}


def test_unknown_token_gets_403_page_and_a_terminal_message(session):
    base = session.server.base_url()
    assert session.server.server_address[0] == "127.0.0.1"
    response = httpx.get(f"{base}/s/{'x' * 43}/")
    assert response.status_code == 403
    assert "This link is not valid" in response.text and '<script src="/static/app.js">' in response.text
    assert len(session.notes) == 1 and "unknown token (HTTP 403)" in session.notes[0]
    api = post(f"{base}/s/{'x' * 43}/api/label", {"token": "x" * 43, "item_id": "p1", "task": "mh", "value": 1})
    assert api.status_code == 403 and api.json()["ok"] is False
    landing = httpx.get(base + "/")
    assert landing.status_code == 200 and not any(text[:20] in landing.text for text in TEXTS.values())
    assert session.store.frame(kind="human").empty


def test_loopback_only_unless_public(tmp_path, sample):
    for host in ("0.0.0.0", "192.0.2.7", "example.org"):
        with pytest.raises(InputError, match="not a loopback address.*--public"):
            open_session(sample, tmp_path / "labels.sqlite", ["alice"], host=host, port=0)
    assert not tokens_path(tmp_path / "labels.sqlite").exists()  # refused before any token was issued


def test_foreign_host_header_is_refused(session):
    url = links(session)["alice"]
    assert httpx.get(url).status_code == 303
    rebinding = httpx.get(url, headers={"Host": f"attacker.example:{session.server.port}"})
    assert rebinding.status_code == 400


def test_post_saves_at_once_and_reopening_resumes_at_first_unlabelled(session):
    url = links(session)["alice"]
    order = sorted(TEXTS, key=positions(session).get)
    assert httpx.get(url).headers["location"].endswith("/item/1")
    reply = label(session, "alice", order[0], 1, tags=["news", "third-person"], note="  first  ", elapsed_ms=1234)
    assert reply.status_code == 200 and reply.json() == {"ok": True, "next": f"/s/{token_of(url)}/item/2"}
    assert label(session, "alice", order[1], 0).status_code == 200
    assert label(session, "alice", order[3], 0).status_code == 200  # skipped item 3
    assert httpx.get(url).headers["location"].endswith("/item/3")
    # the last item's "next" is the first unlabelled one
    assert label(session, "alice", order[3], 1).json()["next"].endswith("/item/3")
    frame = session.store.frame(kind="human", labeler="alice").set_index("item_id")
    assert len(frame) == 3 and frame.loc[order[3], "value"] == 1  # the answer was changed, not duplicated
    first = frame.loc[order[0]]
    assert (first["value"], json.loads(first["tags"]), first["note"], first["latency_ms"]) == (
        1,
        ["third-person", "news"],
        "first",
        1234.0,
    )  # tags in the guideline order
    assert label(session, "alice", order[2], 0).json()["next"].endswith("/item/4")
    assert httpx.get(url).headers["location"].endswith("/done")
    done = httpx.get(url + "done")
    assert "You labelled all 4 items" in done.text


def test_bad_posts_are_refused_and_save_nothing(session):
    urls = links(session)
    alice = urls["alice"]
    good = {"token": token_of(alice), "item_id": "p1", "task": "mh", "value": 1}
    cases = [
        ({**good, "token": token_of(urls["bob"])}, {}, 403),  # another person's token in the body (CSRF-lite)
        ({k: v for k, v in good.items() if k != "token"}, {}, 403),
        ({**good, "value": 2}, {}, 400),
        ({**good, "value": True}, {}, 400),
        ({**good, "tags": ["not-a-tag"]}, {}, 400),
        ({**good, "item_id": "p9"}, {}, 400),
        ({**good, "note": "x" * 2001}, {}, 400),
        (good, {"Origin": "http://evil.example"}, 403),
    ]
    for payload, headers, status in cases:
        response = post(alice + "api/label", payload, headers=headers)
        assert response.status_code == status, (payload, headers, response.text)
    as_form = httpx.post(alice + "api/label", content=json.dumps(good), headers={"Content-Type": "text/plain"})
    assert as_form.status_code == 415
    carol = urls["carol"]
    assert post(carol + "api/label", {**good, "token": token_of(carol)}).status_code == 403
    assert post(alice + "api/consensus", good).status_code == 403
    assert httpx.get(alice + "adjudicate").status_code == 403
    assert httpx.get(carol + "item/1").status_code == 403
    assert httpx.get(alice + "item/99").status_code == 404
    assert session.store.frame(kind="human").empty and session.store.frame(labeler="consensus").empty


def test_annotator_sees_neither_weak_label_nor_other_annotator(session):
    assert label(session, "bob", "p2", 1, tags=["news"], note="BOBNOTE").status_code == 200
    url = links(session)["alice"]
    pages = [httpx.get(f"{url}item/{n}") for n in range(1, 5)]
    pages += [httpx.get(url + "done"), httpx.get(url + "guidelines"), httpx.get(url, follow_redirects=True)]
    assert all(page.status_code == 200 for page in pages)
    html = "\n".join(page.text for page in pages)
    for secret in (*SECRETS, "BOBNOTE", "bob"):
        assert secret not in html, secret
    p2 = pages[positions(session)["p2"] - 1].text
    assert 'data-saved=""' in p2 and "Not labelled yet" in p2
    # texts are escaped, never markup
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "&lt;b&gt;in&lt;/b&gt;" in html and "scream &amp; cry" in html
    headers = pages[0].headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer" and headers["cache-control"] == "no-store"


def test_back_from_the_guidelines_returns_to_the_page_one_came_from(session):
    url = links(session)["alice"]
    item3 = httpx.get(f"{url}item/3").text
    assert 'data-guidelines="' + urlsplit(url).path + 'guidelines?from=item/3"' in item3
    back = lambda page: httpx.get(page).text.split('data-back="')[1].split('"')[0]  # noqa: E731
    base = urlsplit(url).path
    assert back(url + "guidelines?from=item/3") == base + "item/3"
    assert back(url + "guidelines?from=done") == base + "done"
    for elsewhere in ("https://evil.example/", "//evil.example", "../../s/other/item/1", "item/3/../x", ""):
        assert back(url + "guidelines?from=" + elsewhere) == base  # only our own pages, else the start


def test_adjudication_lists_disagreements_and_records_consensus(session):
    answers = {"alice": {"p1": 1, "p2": 0, "p3": 1, "p4": 0}, "bob": {"p1": 1, "p2": 0, "p3": 0, "p4": 0}}
    for name, values in answers.items():
        for item_id, value in values.items():
            note = "joke?" if (name, item_id) == ("bob", "p3") else None
            tags = ["sarcasm/humour"] if note else (["advocacy/awareness"] if item_id == "p2" else [])
            assert label(session, name, item_id, value, tags=tags, note=note).status_code == 200
    carol = links(session)["carol"]
    page = httpx.get(carol)
    assert page.status_code == 200
    assert page.text.count('<section class="case') == 1 and 'data-item-id="p3"' in page.text
    assert "joke?" in page.text and "sarcasm/humour" in page.text
    for secret in SECRETS:
        assert secret not in page.text
    consensus = {
        "token": token_of(carol),
        "item_id": "p3",
        "task": "mh",
        "value": 1,
        "tags": ["sarcasm/humour"],
        "note": "dark humour around a real statement",
    }
    assert post(carol + "api/consensus", {**consensus, "item_id": "p1"}).status_code == 409  # agreed item
    assert post(carol + "api/consensus", consensus).json() == {"ok": True}
    assert post(carol + "api/agreed", {"token": token_of(carol)}).json() == {"ok": True, "written": 3}
    assert post(carol + "api/agreed", {"token": token_of(carol)}).json()["written"] == 0  # nothing new
    frame = session.store.frame(labeler="consensus").set_index("item_id")
    assert frame["kind"].eq("adjudicated").all()
    assert frame["value"].to_dict() == {"p1": 1, "p2": 0, "p3": 1, "p4": 0}
    assert frame["raw_answer"].to_dict() == {"p1": "agreed", "p2": "agreed", "p3": "adjudicated", "p4": "agreed"}
    assert json.loads(frame.loc["p2", "tags"]) == ["advocacy/awareness"]
    assert 'id="n-resolved">1<' in httpx.get(carol).text


def test_tokens_are_stored_hashed_and_kept_until_rotated(tmp_path, sample):
    labels = tmp_path / "labels.sqlite"
    first = open_session(sample, labels, ["alice", "bob"], port=0)
    urls = {p.name: u for p, u in first.urls().items()}
    first.close()
    path = tokens_path(labels)
    content = path.read_text()
    assert path.name == "labels.sqlite.tokens.json" and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert all(token_of(u) not in content for u in urls.values())
    again = open_session(sample, labels, ["alice", "bob"], port=0).start_background()
    try:
        assert set(again.urls().values()) == {None}  # unchanged: the old links still work
        old = urls["alice"].replace(urls["alice"].split("/s/")[0], again.server.base_url())
        assert httpx.get(old).status_code == 303
    finally:
        again.close()
    rotated = open_session(sample, labels, ["alice", "bob"], port=0, new_tokens=True).start_background()
    try:
        assert all(rotated.urls().values())
        old = urls["alice"].replace(urls["alice"].split("/s/")[0], rotated.server.base_url())
        assert httpx.get(old).status_code == 403
    finally:
        rotated.close()


def test_requests_are_not_logged(session, capfd):
    url = links(session)["alice"]
    httpx.get(url, follow_redirects=True)
    label(session, "alice", "p1", 1, note="private words")
    httpx.get(url + "nope")
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    assert session.notes == []


def test_sample_keeps_three_columns_and_a_fixed_order(tmp_path, sample):
    items = load_sample(sample)
    assert {tuple(vars(i)) for i in items} == {("position", "item_id", "task", "text")}
    reversed_path = tmp_path / "reversed.csv"
    pd.read_parquet(sample).iloc[::-1].to_csv(reversed_path, index=False)
    assert [i.item_id for i in load_sample(reversed_path)] == [i.item_id for i in items]  # not the file order
    assert [i.item_id for i in load_sample(reversed_path, keep_order=True)] == ["p4", "p3", "p2", "p1"]
    pd.read_parquet(sample).drop(columns="text").to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InputError, match="bad.parquet: missing column 'text'"):
        load_sample(tmp_path / "bad.parquet")


def test_annotator_name_of_a_model_labeler_is_refused(tmp_path, sample):
    with pytest.raises(InputError, match="labeler 'smollm2' already has llm labels"):
        open_session(sample, tmp_path / "labels.sqlite", ["alice", "smollm2"], port=0)
    with pytest.raises(InputError, match="reserved"):
        open_session(sample, tmp_path / "labels.sqlite", ["alice", "consensus"], port=0)
    with pytest.raises(InputError, match="at least two annotators"):
        open_session(sample, tmp_path / "labels.sqlite", ["alice"], "carol", port=0)
    with pytest.raises(InputError, match="'bob' is named as an annotator and as the adjudicator"):
        open_session(sample, tmp_path / "labels.sqlite", ["alice", "bob"], "bob", port=0)
    assert not tokens_path(tmp_path / "labels.sqlite").exists()


def test_tags_from_parquet_arrays_reach_the_adjudicator(tmp_path):
    """A Parquet round trip turns tag lists into NumPy arrays: empty ones must not crash, others stay tags."""
    items = load_sample(write_sample(tmp_path))
    path = tmp_path / "human.parquet"
    pd.DataFrame(
        {
            "item_id": ["p1", "p2", "p1"],
            "task": "mh",
            "labeler": ["alice", "alice", "bob"],
            "kind": "human",
            "value": [1, 0, 0],
            "tags": [["news"], [], ["news", "hypothetical"]],
            "note": None,
            "raw_answer": None,
            "created_at": "x",
        }
    ).to_parquet(path)
    human = pd.read_parquet(path)
    assert isinstance(human["tags"].iloc[0], np.ndarray)
    cases = {c.item.item_id: c for c in build_cases(items, human, human.iloc[:0], ["alice", "bob"])}
    assert cases["p1"].answers["alice"].tags == ("news",) and cases["p2"].answers["alice"].tags == ()
    assert cases["p1"].union_tags == ("news", "hypothetical") and cases["p1"].disagreement


def write_sample(tmp_path) -> Path:
    path = tmp_path / "plain-sample.csv"
    pd.DataFrame({"item_id": list(TEXTS), "task": "mh", "text": list(TEXTS.values())}).to_csv(path, index=False)
    return path


def test_consensus_checks_and_writes_under_one_lock(session):
    """'Record agreed' must not overwrite an adjudication that happened between its check and its write."""
    app = session.app
    people = {p.name: p for p in session.people}
    base = "/s/x/"
    for name in ("alice", "bob"):
        app.save_label(people[name], {"item_id": "p1", "task": "mh", "value": 1}, base)
    checked, release = threading.Event(), threading.Event()
    cases = app.cases

    def slow_cases():  # the 'record agreed' request pauses between reading the labels and writing
        result = cases()
        if threading.current_thread().name == "agreed":
            checked.set()
            release.wait(120)
        return result

    app.cases = slow_cases
    agreed = threading.Thread(target=app.save_agreed, args=(people["carol"],), name="agreed")
    agreed.start()
    assert checked.wait(120)

    def change_and_adjudicate():  # meanwhile bob changes his answer and carol adjudicates the new disagreement
        app.save_label(people["bob"], {"item_id": "p1", "task": "mh", "value": 0}, base)
        app.save_consensus(people["carol"], {"item_id": "p1", "task": "mh", "value": 0})

    other = threading.Thread(target=change_and_adjudicate)
    other.start()
    other.join(0.5)  # time to reach the lock while "agreed" is paused
    release.set()
    agreed.join(120)
    other.join(120)
    consensus = session.store.frame(labeler="consensus").set_index("item_id")
    assert (consensus.loc["p1", "raw_answer"], consensus.loc["p1", "value"]) == ("adjudicated", 0)


def test_a_silent_connection_is_dropped_after_the_timeout(session):
    assert session.server.request_timeout == 30
    session.server.request_timeout = 0.5
    with socket.create_connection(("127.0.0.1", session.server.port), timeout=120) as stalled:
        stalled.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the headers never end
        start = time.monotonic()
        assert stalled.recv(1024) == b""  # closed by the server
        assert time.monotonic() - start < 20  # after 0.5 s, not the default 30 s (generous: a busy machine)
    assert httpx.get(session.server.base_url() + "/").status_code == 200  # and it still serves


# --- a real browser ---------------------------------------------------------------------------------
@pytest.fixture
def browser(open_browser):
    return open_browser(1200, 900)


def test_two_annotators_and_an_adjudicator_in_a_real_browser(session, browser):
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 10)
    urls = links(session)

    def body():
        return browser.find_element(By.TAG_NAME, "body")

    def press(*keys: str) -> None:
        chain = ActionChains(browser)
        for key in keys:
            chain.send_keys(key)
        chain.perform()

    def next_page_loaded(old_url: str):
        """The browser has left `old_url` and the new page is fully there.

        Not `staleness_of(old body)`: while Chromium swaps documents it may answer "Node with given id does
        not belong to the document", which Selenium does not count as stale; any such WebDriverException
        here just means "not yet".
        """

        def loaded(driver) -> bool:
            try:
                return (
                    driver.current_url != old_url
                    and driver.execute_script("return document.readyState") == "complete"
                    and bool(driver.find_element(By.TAG_NAME, "body").get_attribute("data-page"))
                )
            except WebDriverException:
                return False

        return loaded

    def answer(value: int, tag_keys: str = "", note: str = "") -> None:
        old_url = browser.current_url
        keys = []
        if tag_keys:
            keys += ["t", *tag_keys]
        if note:
            keys += ["n", note, Keys.ESCAPE]
        press(*keys, str(value))
        wait.until(next_page_loaded(old_url))  # saved, then the next page loaded

    # (value, tag keys, note) per item; p3 is the one disagreement, alice first answers it 0 and corrects it
    plans = {
        "alice": {"p1": (1, "", ""), "p2": (0, "a", ""), "p3": (0, "", ""), "p4": (0, "p", "")},
        "bob": {"p1": (1, "", ""), "p2": (0, "a", ""), "p3": (0, "s", "joke?"), "p4": (0, "", "")},
    }
    for name, plan in plans.items():
        browser.get(urls[name])
        for n in range(4):
            if name == "bob" and n == 2:  # reopen: resumes at the first unlabelled item
                browser.get(urls[name])
                assert body().get_attribute("data-position") == "3"
            assert body().get_attribute("data-page") == "item"
            assert body().get_attribute("data-position") == str(n + 1)
            answer(*plan[body().get_attribute("data-item-id")])
        assert body().get_attribute("data-page") == "done"
        assert "all 4 items" in browser.find_element(By.ID, "done-summary").text
        if name == "alice":  # back with the left arrow to p3: her saved answer shows; she changes it to 1
            for _ in range(4):
                old_url = browser.current_url
                press(Keys.ARROW_LEFT)
                wait.until(next_page_loaded(old_url))
                if body().get_attribute("data-item-id") == "p3":
                    break
            assert body().get_attribute("data-saved") == "0"
            assert browser.find_element(By.ID, "status").text == "Your answer: 0"
            answer(1)
        else:  # bob, reopening p3, sees his note but not alice's answer to it
            browser.get(f"{urls['bob']}item/{positions(session)['p3']}")
            assert browser.find_element(By.ID, "note").get_attribute("value") == "joke?"
            assert body().get_attribute("data-saved") == "0"
            here = body().get_attribute("data-position")
            for key in ("g", "b"):  # to the guidelines and back: to this item, not the first unlabelled one
                old_url = browser.current_url
                press(key)
                wait.until(next_page_loaded(old_url))
            assert body().get_attribute("data-page") == "item" and body().get_attribute("data-position") == here
        assert not any(secret in browser.page_source for secret in SECRETS)

    # the adjudicator sees the one disagreement with both labels, the tag and the note, and decides 1
    browser.get(urls["carol"])
    cases = browser.find_elements(By.CSS_SELECTOR, "section.case")
    assert [c.get_attribute("data-item-id") for c in cases] == ["p3"]
    rows = {
        r.get_attribute("data-annotator"): r.text
        for r in cases[0].find_elements(By.CSS_SELECTOR, "tr.annotator-answer")
    }
    assert rows["alice"].split()[:2] == ["alice", "1"] and rows["bob"].startswith("bob 0")
    assert "sarcasm/humour" in rows["bob"] and "joke?" in rows["bob"]
    press("1")
    wait.until(lambda d: d.find_element(By.ID, "n-resolved").text == "1")
    assert "consensus: 1" in cases[0].find_element(By.CSS_SELECTOR, ".case-status").text
    browser.find_element(By.ID, "record-agreed").click()
    wait.until(lambda d: "Recorded 3" in d.find_element(By.ID, "agreed-status").text)

    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], severe  # no script error, no Content-Security-Policy violation

    frame = session.store.frame()
    assert len(frame) == 16  # 4 llm + 2 x 4 human + 4 consensus
    human = frame[frame["kind"] == "human"]
    values = {name: dict(zip(g["item_id"], g["value"], strict=True)) for name, g in human.groupby("labeler")}
    assert values == {"alice": {"p1": 1, "p2": 0, "p3": 1, "p4": 0}, "bob": {"p1": 1, "p2": 0, "p3": 0, "p4": 0}}
    tags = {(r.labeler, r.item_id): json.loads(r.tags) for r in human.itertuples() if json.loads(r.tags)}
    assert tags == {
        ("alice", "p2"): ["advocacy/awareness"],
        ("alice", "p4"): ["third-person"],
        ("bob", "p2"): ["advocacy/awareness"],
        ("bob", "p3"): ["sarcasm/humour"],
    }
    assert human.set_index(["labeler", "item_id"])["note"].dropna().to_dict() == {("bob", "p3"): "joke?"}
    consensus = frame[frame["labeler"] == "consensus"].set_index("item_id")
    assert consensus["kind"].eq("adjudicated").all() and len(consensus) == 4
    assert consensus["value"].to_dict() == {"p1": 1, "p2": 0, "p3": 1, "p4": 0}
    assert consensus.loc["p3", "raw_answer"] == "adjudicated"
    assert json.loads(consensus.loc["p3", "tags"]) == ["sarcasm/humour"]  # the annotators' tags, pre-checked
    assert frame[frame["kind"] == "llm"]["value"].tolist() == [1, 1, 1, 1]  # untouched
    assert set(TAGS) >= {t for ts in tags.values() for t in ts}

    # The agreement report reflects what happened in the browser: alice and bob disagree on p3 only.
    report = audit_agreement(AgreementInputs(frame), AgreementOptions("mh", weak_labeler="smollm2", n_boot=200))
    pair = report.table("human_agreement").iloc[0]
    assert (pair["n"], pair["observed_agreement"]) == (4, 0.75)
    assert pair["kappa"] == pytest.approx(0.5)  # p_o 0.75, p_e 0.5 x 0.25 + 0.5 x 0.75 = 0.5
    weak = report.table("weak_vs_reference").set_index("metric")["estimate"]
    assert (weak["precision"], weak["recall"]) == (0.5, 1.0)  # always 1 against consensus 1, 0, 1, 0
