"""The monitor's live page (mhaudit.report.live) as a real server on 127.0.0.1: the round counter, the report's own
files and nothing else, the Host check, the refusals, a prompt stop; then in headless Chromium across two rounds
of the monitor on a SYNTHETIC stream: the page shows the second round's windows without being reloaded by hand."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pandas as pd
import pytest

from mhaudit.core.errors import InputError
from mhaudit.report import AuditResult, Section, write_report
from mhaudit.report.live import LivePage
from mhaudit.weak_supervision.collect.store import PostStore
from tests.audits.test_monitor import CLASSES, _store, fixture_setup  # noqa: F401  (fixture)

SVG = b"<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'><rect width='10' height='10'/></svg>"


def _report(folder, title: str = "Round one") -> None:
    table = pd.DataFrame({"window": ["2026-01-01", "2026-01-02"], "posts": [10, 12]})
    write_report(AuditResult(title, [Section("Windows", "", {"windows": table}, figures={"trend": SVG})]), folder)


def _get(page: LivePage, path: str, *, host: str | None = None, method: str = "GET", body: bytes | None = None):
    """(status, headers, body) of one request sent as written: the path is not normalised, the Host is ours."""
    connection = http.client.HTTPConnection("127.0.0.1", page.port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", f"127.0.0.1:{page.port}" if host is None else host)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


def test_the_page_waits_for_the_first_round_then_serves_each_round_with_its_number(tmp_path):
    with LivePage(tmp_path / "out") as page:  # the folder does not exist yet: the monitor makes it
        assert page.url == f"http://127.0.0.1:{page.port}/" and page.port > 0
        status, headers, body = _get(page, "/")
        assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
        assert b"Waiting for the first round" in body and b"<script src='/live.js' defer>" in body
        assert b"live: waiting for the first round" in body and b"data-round='0'" in body
        assert json.loads(_get(page, "/round")[2]) == {"round": 0, "updated": None}

        _report(tmp_path / "out")  # written, not yet published: the page says it is from before this run
        assert b"before this run; waiting for its first round" in _get(page, "/")[2]
        assert page.published() == 1 and page.round == 1
        state = json.loads(_get(page, "/round")[2])
        assert state["round"] == 1 and state["updated"].endswith("Z")
        body = _get(page, "/")[2].decode()
        assert "<h1>Round one</h1>" in body and "live: round 1, updated " in body and "data-round='1'" in body
        assert body.count("<script") == 1 and body.index("id='mhaudit-live'") < body.index("<h1>")
        assert _get(page, "/report.html")[2].decode().count("id='mhaudit-live'") == 1

        _report(tmp_path / "out", "Round two")
        page.published()
        assert page.published() == 3 and json.loads(_get(page, "/round")[2])["round"] == 3
        assert "<h1>Round two</h1>" in _get(page, "/")[2].decode()
        status, headers, script = _get(page, "/live.js")
        assert status == 200 and headers["Content-Type"].startswith("text/javascript") and b"/round" in script


def test_only_the_reports_own_files_are_served_with_their_types(tmp_path):
    out = tmp_path / "out"
    _report(out)
    (out / "alert" / "2026-01-02").mkdir(parents=True)
    (out / "alert" / "2026-01-02" / "sample.parquet").write_bytes(b"post ids")  # the monitor's sample: not served
    (tmp_path / "secret.csv").write_text("outside")
    (out / "tables" / "link.csv").symlink_to(tmp_path / "secret.csv")
    (out / "tables" / ".windows.csv.1234.part").write_text("half written")
    with LivePage(out) as page:
        expected = {
            "/report.json": "application/json",
            "/report.md": "text/markdown; charset=utf-8",
            "/tables/windows--windows.csv": "text/csv; charset=utf-8",
            "/figures/trend.svg": "image/svg+xml",
        }
        for path, content_type in expected.items():
            status, headers, body = _get(page, path)
            assert status == 200 and headers["Content-Type"] == content_type, path
            assert body == (out / path[1:]).read_bytes()
            assert (
                headers["X-Content-Type-Options"] == "nosniff"
                and "default-src 'none'" in headers["Content-Security-Policy"]
            )
        for path in (
            "/alert/2026-01-02/sample.parquet",
            "/../secret.csv",
            "/%2e%2e/secret.csv",
            "/tables/..%2f..%2fsecret.csv",
            "/figures/../report.json",
            "/tables/link.csv",  # a link out of the folder
            "/tables/.windows.csv.1234.part",
            "/tables/",
            "/tables",
            "/alert/",
            "/report.txt",
            "//etc/passwd",
            "/figures/trend.svg/..",
        ):
            status, headers, body = _get(page, path)
            assert status == 404 and body == b"no such file in the report", path
            assert b"outside" not in body and b"post ids" not in body


def test_a_request_for_another_host_is_refused_and_only_get_and_head_are_answered(tmp_path):
    _report(tmp_path)
    with LivePage(tmp_path) as page:
        for host in (f"evil.example:{page.port}", "attacker.test", "", "[::1", "127.0.0.1.evil.example"):
            status, _, body = _get(page, "/round", host=host)
            assert status == 400 and body == b"this server answers only to the address it printed", host
            assert _get(page, "/report.json", host=host)[0] == 400
        for host in (f"localhost:{page.port}", f"LOCALHOST:{page.port}", "127.0.0.1"):
            assert _get(page, "/round", host=host)[0] == 200, host
        status, headers, body = _get(page, "/", method="HEAD")
        assert status == 200 and body == b"" and int(headers["Content-Length"]) > 1000
        for method in ("POST", "PUT", "DELETE", "OPTIONS", "BREW"):
            status, headers, body = _get(page, "/round", method=method, body=b"{}")
            assert status == 405 and headers["Allow"] == "GET, HEAD", method
            assert body == b"this server answers GET and HEAD only"
        with socket.create_connection(("127.0.0.1", page.port), timeout=5) as raw:
            raw.sendall(b"garbage\r\n\r\n")
            assert raw.recv(200).startswith(b"HTTP/1.0 400 ")
        assert page.round == 0  # nothing a client sends publishes a round


def test_a_non_loopback_address_or_a_busy_port_is_one_sentence(tmp_path):
    with pytest.raises(InputError, match="not a loopback address: anyone on the network could reach the monitor's"):
        LivePage(tmp_path, host="0.0.0.0")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(InputError, match=rf"^cannot listen on 127\.0\.0\.1:{port} \(.*\); pick another --serve"):
            LivePage(tmp_path, port=port)
    with pytest.raises(ValueError, match="poll_seconds"):
        LivePage(tmp_path, poll_seconds=0)


def test_stop_is_prompt_with_a_client_that_stalls_and_frees_the_port(tmp_path):
    page = LivePage(tmp_path).start()
    assert page.start() is page  # a second start does nothing
    before = threading.active_count()
    stalled = socket.create_connection(("127.0.0.1", page.port), timeout=5)  # connects, never sends a request
    stalled.sendall(b"GET / HTTP/1.1\r\n")
    deadline = time.monotonic() + 60  # the event: a handler thread holds it (the stall stop() must not wait for)
    while threading.active_count() == before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() > before, "the server never took the connection"
    serving = [t for t in threading.enumerate() if t.name == "mhaudit-live-page"]
    assert len(serving) == 1 and serving[0].daemon
    began = time.monotonic()
    page.stop()
    assert time.monotonic() - began < 2.0 and not serving[0].is_alive()
    page.stop()  # again: nothing
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", page.port), timeout=2).close()
    stalled.close()
    LivePage(tmp_path, port=page.port).stop()  # the port is free again
    LivePage(tmp_path).stop()  # never started: stop closes the socket


# --- in a browser, across two rounds of the monitor ------------------------------------------------------------
WIDTH, HEIGHT = 1400, 900


def _monitor_round(store, model, reference, options, out) -> AuditResult:
    """A monitor round's report: the new posts scored, every scored post audited, the report written."""
    import mhaudit as mh
    from mhaudit.models import load_model
    from mhaudit.weak_supervision.collect.scores import scored_posts
    from mhaudit.weak_supervision.collect.scoring import model_digest, score_posts

    digest = model_digest(model)
    scored_now = score_posts(store, load_model, model, digest)
    with PostStore(store) as posts:
        scored = scored_posts(posts, digest, CLASSES)
    result = mh.audit_monitor(
        mh.MonitorInputs(scored, reference, "tfidf-lr", digest, CLASSES, scored_now, synthetic=True), options
    )
    write_report(result, out)
    return result


def test_the_open_page_shows_the_next_rounds_windows_without_a_reload_by_hand(setup, tmp_path, open_browser):
    """Round 1 sees windows 1-3 of a SYNTHETIC stream, round 2 all five (the prevalence doubles from window 4): the
    page opened before round 1 shows round 1 when it is published, then reloads itself once round 2 is, and shows
    windows 4 and 5. It says which round it shows, and, once the monitor has stopped, that the monitor no longer
    answers. Each round is what the monitor's round does: score the new posts, audit them, write the report."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    import mhaudit as mh
    from mhaudit.synthetic.simulate_stream import StreamConfig, simulate_stream

    work, texts = setup
    posts = simulate_stream(
        texts["depression"], texts["other"], StreamConfig(n_windows=5, per_window=400, change_at=3, seed=9)
    )
    store = _store(tmp_path / "posts.sqlite", posts[:1200])
    reference = mh.read_predictions([work / "reference.parquet"], classes=CLASSES)
    options = mh.MonitorOptions(positive="depression", n_boot=100)
    out = tmp_path / "out"

    with LivePage(out, poll_seconds=0.5) as page:
        driver = open_browser(WIDTH, HEIGHT)
        driver.get(page.url)
        wait = WebDriverWait(driver, 30)
        wait.until(seen.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Waiting for the first round"))
        driver.save_screenshot(str(tmp_path / "waiting.png"))

        first = _monitor_round(store, work / "model", reference, options, out)
        page.published()
        wait.until(seen.text_to_be_present_in_element((By.ID, "mhaudit-live"), "live: round 1, updated"))
        body = driver.find_element(By.TAG_NAME, "body").text
        assert len(first.table("windows")) == 3 and "2026-01-03 00:00" in body and "2026-01-05 00:00" not in body
        driver.execute_script("window.sameDocument = true")  # gone once the page reloads itself
        driver.save_screenshot(str(tmp_path / "round1.png"))

        with PostStore(store) as more:
            more.commit_batch(posts[1200:], cursor=2000)
        second = _monitor_round(store, work / "model", reference, options, out)
        assert len(second.table("windows")) == 5
        page.published()
        wait.until(seen.text_to_be_present_in_element((By.ID, "mhaudit-live"), "live: round 2, updated"))
        wait.until(seen.text_to_be_present_in_element((By.TAG_NAME, "body"), "2026-01-05 00:00"))
        assert driver.execute_script("return window.sameDocument") is None  # the page reloaded itself
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "2026-01-04 00:00" in body and "SYNTHETIC" in body
        assert driver.execute_script("return document.documentElement.scrollWidth") <= WIDTH
        corner = driver.execute_script(
            "const r = document.getElementById('mhaudit-live').getBoundingClientRect(); return [r.top, r.right];"
        )
        assert 0 <= corner[0] < 40 and WIDTH - 60 < corner[1] <= WIDTH  # the top right corner, in view
        driver.save_screenshot(str(tmp_path / "round2.png"))
    # the monitor has stopped: the page says the monitor does not answer, and still shows round 2
    stale = "not live (no answer from the monitor): round 2, updated"
    wait.until(seen.text_to_be_present_in_element((By.ID, "mhaudit-live"), stale))
    assert "2026-01-05 00:00" in driver.find_element(By.TAG_NAME, "body").text
    driver.save_screenshot(str(tmp_path / "stopped.png"))
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "/round" not in e["message"]] == []
