"""Hostile input to the annotation app (issue 32): a seeded, bounded fuzz run of raw HTTP requests against a
real `mhaudit annotate` process on 127.0.0.1.

Every request is written to a fresh socket byte by byte (so that broken request lines, lying Content-Lengths and
duplicate headers reach the server as sent). Checks after each one: a status line came back, never a 5xx;
a request that is not a well-formed answer left the label store's rows and its file bytes (main file and WAL)
as they were; a well-formed answer (about 1 in 20) was stored. At the end the server still serves, and its
terminal output holds no traceback and none of the request's text.
"""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections import Counter

import numpy as np

from tests.weak_supervision.annotate.served import STOP_WITHIN_S, Served, token_of, write_study

N_REQUESTS = 2400
PRIVATE = "PRIVATE-WORDS"  # in every body: must never reach the terminal
METHODS = ("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "FOO", "get", "PROPFIND", "GET\x00")
TRAVERSALS = (
    "/static/../../../etc/passwd",
    "/static/..%2f..%2fpyproject.toml",
    "/static/app.js/../../app.py",
    "/static/%2e%2e/%2e%2e/etc/passwd",
    "/static/",
    "/static/app.py",
    "/static/..\\..\\app.py",
    "//etc/passwd",
    "/s/{tok}/../../static/app.js",
    "/s/{tok}/item/../../../etc/passwd",
    "/s/{tok}/guidelines?from=../../../etc/passwd",
    "/s/{tok}/guidelines?from=https://evil.example",
    "/templates/item.html",
    "/s/{tok}/%2e%2e/%2e%2e/labels.sqlite",
    "/labels.sqlite",
    "/..",
    "/s/{tok}/item/%31",
    "/s/{tok}/item/-1",
    "/s/{tok}/item/0",
    "/s/{tok}/item/²",
    "/s/{tok}/item/١",
    "/s/{tok}/item/" + "9" * 5000,
    "/s/{tok}/item/1e3",
    "/s/{tok}/item/ 1",
    "/s/{tok}/done/../item/1",
)
JUNK = (
    "\u0000",
    "\ud800",
    "\udfff",
    "\ufeff",
    "\u202e",
    "ｅｖｉｌ",
    "💥",
    "\x7f",
    "é",
    "\u2028",
    "\\",
    "%00",
    "<script>",
)
CONTENT_TYPES = (
    "text/plain",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded",
    "",
    "application/jsonx",
    "json",
    "application/xml",
    "application/json\x00",
)
ORIGINS = (
    "http://evil.example",
    "https://127.0.0.1.evil.example",
    "http://[",
    "javascript:alert(1)",
    "http://127.0.0.1",
    "file://",
    "http://localhost:1",
    "x" * 5000,
    "http://127.0.0.1:{port}.evil",
)
LENGTHS = ("-1", "1e3", "99999999999999999999", "+5", "0x10", "", "5 5", "-0", "१२", "9" * 40)
HOSTS = ("evil.example", "[::1", "127.0.0.1.evil.example", "", "127.0.0.1:{port}@evil.example", "ｌｏｃａｌｈｏｓｔ")


class Fuzzer:
    def __init__(self, served: Served, items: list[str], seed: int):
        self.rng = np.random.default_rng(seed)
        self.served = served
        self.port = int(served.base.rsplit(":", 1)[1])
        self.host = f"127.0.0.1:{self.port}"
        self.links = served.links
        self.items = items

    # --- the wire ----------------------------------------------------------------------------------------
    def send(self, raw: bytes) -> tuple[int | None, bytes]:
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as conn:  # a bound against a hang only
            try:
                conn.sendall(raw)
                conn.shutdown(socket.SHUT_WR)  # the whole request is sent: a short body ends here
            except OSError:
                pass  # the server answered before reading all of it: read what it said
            chunks = []
            try:
                while chunk := conn.recv(65536):
                    chunks.append(chunk)
            except ConnectionResetError:
                pass
        reply = b"".join(chunks)
        head = reply.split(b"\r\n", 1)[0].split()
        status = int(head[1]) if len(head) >= 2 and head[0].startswith(b"HTTP/") and head[1].isdigit() else None
        return status, reply

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        headers: dict | None = None,
        content_type: str | None = "application/json",
    ) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}", "Connection: close"]
        if body is not None:
            if content_type is not None:
                lines.append(f"Content-Type: {content_type}")
            if not headers or "Content-Length" not in headers:
                lines.append(f"Content-Length: {len(body)}")
        for name, value in (headers or {}).items():
            if value is not None:  # None: leave the header out
                lines.append(f"{name}: {value}")
        if headers and "Host" in headers:
            lines.remove(f"Host: {self.host}")
        head = "\r\n".join(lines).encode("utf-8", "surrogatepass") + b"\r\n\r\n"
        return head + (body or b"")

    # --- what is sent ------------------------------------------------------------------------------------
    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def person(self) -> tuple[str, str]:
        name = self.pick(("alice", "bob"))
        return name, self.links[name]

    def answer(self, link: str, **change) -> dict:
        body = {
            "token": token_of(link),
            "item_id": self.pick(self.items),
            "task": "mh",
            "value": int(self.rng.integers(2)),
            "tags": [],
            "note": f"{PRIVATE} {self.rng.integers(1e6)}",
        }
        body.update(change)
        return body

    def post(self, link: str, call: str, payload, **kw) -> bytes:
        body = (
            payload
            if isinstance(payload, bytes)
            else json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
        )
        return self.request("POST", link.split(self.host, 1)[1] + call, body, **kw)

    def valid(self) -> tuple[str, bytes, dict]:
        name, link = self.person()
        body = self.answer(link)
        return "valid answer", self.post(link, "api/label", body), {"labeler": name, **body}

    def hostile(self) -> tuple[str, bytes]:
        name, link = self.person()
        path = link.split(self.host, 1)[1]
        tok = token_of(link)
        kind = self.pick(
            (
                "malformed json",
                "wrong types",
                "huge body",
                "unknown item",
                "other token",
                "traversal",
                "method",
                "origin",
                "content type",
                "unicode",
                "content length",
                "host",
                "request line",
            )
        )
        good = json.dumps(self.answer(link)).encode()
        if kind == "malformed json":
            body = self.pick(
                (
                    good[: int(self.rng.integers(1, len(good)))],
                    b"{",
                    b"[]",
                    b"null",
                    b'"x"',
                    b"1",
                    b"[" * 60000,
                    b'{"a":' * 20000,
                    good + b"}",
                    b"\xff\xfe" + good,
                    b"{'token': 1}",
                    bytes(self.rng.integers(0, 256, 300, dtype=np.uint8)),
                    good.replace(b'"', b"'"),
                    b'{"value": NaN}',
                    b'{"value": 1' + b"0" * 5000 + b"}",
                )
            )
            return kind, self.post(link, "api/label", body)
        if kind == "wrong types":
            field = self.pick(("value", "item_id", "task", "tags", "note", "token"))  # elapsed_ms: optional
            junk = self.pick(
                (
                    1.0,
                    True,
                    [1],
                    {"": 1},
                    -1,
                    10**30,
                    [["news"]],
                    [None],
                    {},
                    1e308,
                    "x" * 3000,
                    *(("1", "news", None, 2) if field != "note" else ()),  # a note may be text or null
                    *(([],) if field not in ("note", "tags") else ()),  # no tags: []
                    *((["news"] * 100000,) if field == "tags" else ()),
                )
            )
            return kind, self.post(link, "api/label", self.answer(link, **{field: junk}))
        if kind == "huge body":
            size = int(self.rng.integers(64 * 1024 + 1, 400 * 1024))
            return kind, self.post(link, "api/label", self.answer(link, note="x" * size))
        if kind == "unknown item":
            return kind, self.post(
                link,
                "api/label",
                self.answer(
                    link,
                    item_id=self.pick(("syn9999", "", "syn0001 ", "../syn0001", "SYN0001", "syn0001\x00")),
                    task=self.pick(("mh", "si")),
                ),
            )
        if kind == "other token":
            other = self.links["bob" if name == "alice" else "alice"]
            carol = self.links["carol"]
            return (
                kind,
                self.pick(
                    (
                        self.post(link, "api/label", self.answer(other)),  # bob's token in alice's page
                        self.post(carol, "api/label", self.answer(carol)),  # the adjudicator labels
                        self.post(link, "api/consensus", self.answer(link)),  # an annotator adjudicates
                        self.post(link, "api/agreed", {"token": tok}),
                        self.post(carol, "api/consensus", self.answer(link)),  # alice's token on carol's page
                        # a tampered token: its last character changed (to "B" where it already is "A")
                        self.post(
                            link.replace(tok, tok[:-1] + ("B" if tok.endswith("A") else "A")),
                            "api/label",
                            self.answer(link),
                        ),
                        self.post(link.replace(tok, "x" * 5000), "api/label", self.answer(link)),
                        self.request("GET", carol.split(self.host, 1)[1] + "item/1"),
                        self.request("GET", path + "adjudicate"),
                    )
                ),
            )
        if kind == "traversal":
            return kind, self.request(
                self.pick(("GET", "HEAD", "POST")), self.pick(TRAVERSALS).replace("{tok}", tok), good
            )
        if kind == "method":
            return kind, self.request(
                self.pick(METHODS),
                self.pick((path, path + "api/label", "/", "/static/app.js")),
                self.pick((None, good)),
            )
        if kind == "origin":
            origin = self.pick(ORIGINS).replace("{port}", str(self.port))
            return kind, self.post(link, "api/label", self.answer(link), headers={"Origin": origin})
        if kind == "content type":
            return kind, self.post(link, "api/label", self.answer(link), content_type=self.pick(CONTENT_TYPES))
        if kind == "unicode":
            junk = "".join(self.pick(JUNK) for _ in range(int(self.rng.integers(1, 8))))
            return kind, self.pick(
                (
                    self.post(link, "api/label", self.answer(link, note=junk, item_id=junk)),
                    self.post(link, "api/label", self.answer(link, token=junk)),
                    self.request("GET", path + "item/" + junk),
                    self.request("GET", "/s/" + junk + "/"),
                    self.request("GET", path, headers={"X-" + junk: junk}),
                    self.post(link, "api/label", self.answer(link, tags=[junk])),
                )
            )
        if kind == "content length":
            value = self.pick(LENGTHS)
            if value == "":  # chunked: no Content-Length
                chunked = hex(len(good))[2:].encode() + b"\r\n" + good + b"\r\n0\r\n\r\n"
                return kind, self.request(
                    "POST",
                    path + "api/label",
                    chunked,
                    headers={"Transfer-Encoding": "chunked", "Content-Length": None},
                )
            if value == "5 5":
                return kind, self.request(
                    "POST", path + "api/label", good, headers={"Content-Length": str(len(good)), "content-length": "5"}
                )
            return kind, self.post(link, "api/label", good, headers={"Content-Length": value})
        if kind == "host":
            return kind, self.post(
                link,
                "api/label",
                self.answer(link),
                headers={"Host": self.pick(HOSTS).replace("{port}", str(self.port))},
            )
        line = self.pick(
            (
                b"\x00\x01\x02\r\n\r\n",
                b"GET\r\n\r\n",
                b"GET / HTTP/2.0\r\n\r\n",
                b"GET / HTTP/1.1 x\r\n\r\n",
                b"GET " + b"/a" * 40000 + b" HTTP/1.1\r\n\r\n",
                b"GET / HTTP/9.9\r\n\r\n",
                b"\r\n\r\n",
                b"GET / HTTP/1.1\r\n" + b"X-A: 1\r\n" * 150 + b"\r\n",
                b"POST / HTTP/1.1\r\nHost: a\r\n",
                b"GET / HTTP/1.1\r\nHost: " + b"x" * 70000 + b"\r\n\r\n",
                b"GET /\r\n\r\n",
                b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
                "GÉT /é HTTP/1.1\r\n\r\n".encode(),
            )
        )
        return "request line", line


def store_state(conn: sqlite3.Connection, labels) -> tuple[list, str]:
    rows = conn.execute(
        "SELECT item_id, task, labeler, kind, value, tags, note FROM labels ORDER BY 1, 2, 3"
    ).fetchall()
    digest = hashlib.sha256()
    for path in (labels, labels.with_name(labels.name + "-wal")):
        if path.exists():
            digest.update(path.read_bytes())
    return rows, digest.hexdigest()


def test_hostile_requests_get_4xx_and_change_nothing(tmp_path):
    sample, labels, _ = write_study(tmp_path, 20, seed=7)
    items = [f"syn{i:04d}" for i in range(20)]
    served = Served(sample, labels, ["alice", "bob"], adjudicator="carol").start()
    fuzz = Fuzzer(served, items, seed=3232)
    statuses: Counter = Counter()
    kinds: Counter = Counter()
    seen: dict[str, set[int]] = {}
    stored = 0
    try:
        conn = sqlite3.connect(f"file:{labels}?mode=ro", uri=True)
        rows, digest = store_state(conn, labels)
        for n in range(N_REQUESTS):
            if fuzz.rng.random() < 0.05:
                kind, raw, answer = fuzz.valid()
            else:
                (kind, raw), answer = fuzz.hostile(), None
            status, reply = fuzz.send(raw)
            kinds[kind] += 1
            statuses[status] += 1
            seen.setdefault(kind, set()).add(status or 0)
            # http.server answers nothing to an empty request line (there is no request); all else gets a status
            assert (status is not None or raw.startswith(b"\r\n")) and (status or 0) < 500, (
                n,
                kind,
                raw[:300],
                reply[:500],
            )
            assert b"Traceback" not in reply
            assert not any(leak in reply for leak in (b"root:x:", b"SQLite format", b"[project]", b"import ")), n
            after, after_digest = store_state(conn, labels)
            if answer is None:
                assert status is None or 400 <= status < 500 or not raw.startswith(b"POST"), (
                    n,
                    kind,
                    raw[:300],
                    reply[:300],
                )
                assert (after, after_digest) == (rows, digest), (n, kind, raw[:300], reply[:300])
            else:
                assert status == 200, (n, reply[:300])
                key = (answer["item_id"], "mh", answer["labeler"])
                expected = [r for r in rows if r[:3] != key] + [(*key, "human", answer["value"], "[]", answer["note"])]
                assert after == sorted(expected)
                stored += 1
            rows, digest = after, after_digest
        conn.close()
        # still serving: the personal link, a page, a good answer
        alice = served.links["alice"]
        status, reply = fuzz.send(fuzz.request("GET", alice.split(fuzz.host, 1)[1]))
        assert status == 303
        kind, raw, _ = fuzz.valid()
        assert fuzz.send(raw)[0] == 200
    finally:
        served.stop()
    terminal = "".join(served.stderr)
    assert served.process.returncode == 0
    assert "Traceback" not in terminal and PRIVATE not in terminal and "SYNTHETIC post" not in terminal
    assert "internal error" not in terminal, terminal
    assert sum(kinds.values()) == N_REQUESTS and len(kinds) == 14 and stored >= 80
    assert not any(s and s >= 500 for s in statuses)
    shown = dict(sorted((str(s or "no answer"), n) for s, n in statuses.items()))
    print(
        f"\n{N_REQUESTS} requests: {dict(sorted(kinds.items()))}; statuses {shown}; "
        f"answers stored {stored}; per kind { ({k: sorted(v) for k, v in sorted(seen.items())}) }"
    )


def _trickle(conn: socket.socket, stop: threading.Event) -> None:
    """A request header one byte a second: never complete, never silent long enough to be timed out."""
    while not stop.wait(1.0):
        try:
            conn.sendall(b"x")
        except OSError:
            return


def test_ctrl_c_stops_the_server_while_stalled_clients_hold_connections(tmp_path):
    """Clients that connect and never send, send half a request, trickle one, or never read their answers hold
    handler threads; Ctrl-C still stops the server at once, with its summary, and none of them is waited for."""
    sample, labels, _ = write_study(tmp_path, 10, seed=11)
    served = Served(sample, labels, ["alice", "bob"]).start()
    host = served.base.removeprefix("http://")
    stop_trickling = threading.Event()
    stalled = [socket.create_connection(("127.0.0.1", int(host.rsplit(":", 1)[1])), timeout=60) for _ in range(8)]
    try:
        # stalled[0:2] never send a byte
        stalled[2].sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\n".encode())  # the headers never end
        path = served.links["alice"].removeprefix(served.base)
        stalled[3].sendall(
            f"POST {path}api/label HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            'Content-Length: 5000\r\n\r\n{"token": '.encode()
        )  # the body never ends
        for conn in stalled[4:6]:  # request after request, and never a read: the server's sends block
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            conn.sendall(f"GET /static/app.js HTTP/1.1\r\nHost: {host}\r\n\r\n".encode() * 200)
        for conn in stalled[6:8]:
            conn.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nX-Slow: ".encode())
            threading.Thread(target=_trickle, args=(conn, stop_trickling), daemon=True).start()
        assert Fuzzer(served, [], seed=0).send(f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())[0] == 200
        asked = time.monotonic()
        served.process.send_signal(signal.SIGINT)
        # the wait is on the process's exit, its bound generous (a busy machine): the trickling clients never
        # time out, so a server that waited for its connections (e.g. non-daemon handler threads) never stops
        try:
            exit_code = served.process.wait(STOP_WITHIN_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running {STOP_WITHIN_S} s after SIGINT with stalled clients") from None
        took = time.monotonic() - asked
    finally:
        stop_trickling.set()
        served.stop()  # kills it if it is still running, and collects what it printed
        for conn in stalled:
            conn.close()
    printed = "".join(served.stdout.get_nowait() for _ in range(served.stdout.qsize()))
    assert exit_code == 0 and "stopped. labelled: alice 0/10, bob 0/10" in printed, (exit_code, printed)
    assert not any("Traceback" in line for line in served.stderr), served.stderr
    print(f"\nstopped {took:.2f} s after SIGINT with 8 stalled connections open")
