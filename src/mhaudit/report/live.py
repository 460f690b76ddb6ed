"""The monitor's live page: a report folder (written by `write_report`) served over HTTP, and reloaded in the
reader's browser after each round, with no reload by hand.

    with LivePage("out") as page:      # binds 127.0.0.1 (port 0: a free one); page.url says where
        ...                            # each round: write_report(result, "out"), then
        page.published()               # the open pages reload within `poll_seconds`

Routes:

    GET /  (and /report.html)      report.html with a status line ("live: round 2, updated 14:05 UTC") and a script
                                   that asks /round every few seconds and reloads the page when the round changes;
                                   before the first report, a page that says it waits for the first round
    GET /round                     {"round": n, "updated": "2026-01-05T14:05:00Z" or null}
    GET /live.js                   that script (a file of its own: the pages' Content-Security-Policy runs no
                                   inline script); /favicon.ico is empty
    GET /report.md, /report.json, /figures/NAME.svg|png, /tables/NAME.csv   the report's own files, as written

Nothing else in the folder is served: not the monitor's alert/<window>/ samples (which hold post ids), not a
half-written temporary file, no directory listing, no path outside the folder (404). The report holds no post
text and the page adds none.

Safety, as the annotation app's (`mhaudit.core.serving`): loopback only unless `public`; a request whose Host
header names another address is refused (400; DNS rebinding); a method other than GET and HEAD is a 405; every
refusal is one sentence. Nothing is printed or logged: the page is quiet, the monitor's terminal is its own.
"""

from __future__ import annotations

import html
import json
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import unquote, urlsplit

from mhaudit.core.serving import (
    HostCheck,
    address_family,
    bind_address,
    listen_error,
    refuse_exposed_host,
    server_url,
)

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".json": "application/json",
    ".csv": "text/csv; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
REPORTS = ("report.html", "report.md", "report.json")
FOLDERS = {"figures": (".svg", ".png"), "tables": (".csv",)}  # write_report's sub-folders and what they hold
SECURITY_HEADERS = {
    # the report styles itself inline and embeds its figures as data: URIs; scripts come from /live.js only
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
REFUSALS = {  # the standard library's own refusals (a bad request line, headers too long, an unknown method)
    400: "the request could not be read as HTTP/1.0 or HTTP/1.1",
    405: "this server answers GET and HEAD only",
    408: "the request did not arrive in time",
    414: "the address is too long",
    431: "the request headers are too large",
}
LIVE_JS = b"""// mhaudit's live page: ask for the round every few seconds; reload when a new one is published.
(() => {
  const status = document.getElementById("mhaudit-live");
  const shown = status.dataset.round;
  const every = 1000 * Number(status.dataset.poll);
  const text = status.textContent;
  async function poll() {
    try {
      const answer = await fetch("/round", {cache: "no-store"});
      if (!answer.ok) throw new Error(String(answer.status));
      const state = await answer.json();
      if (String(state.round) !== shown) { location.reload(); return; }
      status.textContent = text;
      status.classList.remove("stale");
    } catch (error) {
      status.textContent = "not live (no answer from the monitor): " + text.replace(/^live: /, "");
      status.classList.add("stale");
    }
    setTimeout(poll, every);
  }
  setTimeout(poll, every);
})();
"""
STATUS_STYLE = (
    "<style>#mhaudit-live{position:fixed;top:.3em;right:.5em;z-index:10;font:.8em system-ui,sans-serif;color:#0f5132;"
    "background:#f4faf6;border:1px solid #9ec5ae;border-radius:.3em;padding:.1em .5em}"
    "#mhaudit-live.stale{color:#842029;background:#fbeeee;border-color:#e0a5ab}</style>"
)
WAITING_PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>mhaudit monitor: waiting for the first round"
    "</title><style>body{font-family:system-ui,sans-serif;max-width:50em;margin:2em auto;padding:0 1em}</style>"
    "</head><body><h1>Waiting for the first round</h1><p>The monitor has not written its report yet. This page "
    "shows it when the first round ends, and each later round when it ends; there is nothing to reload by hand.</p>"
    "</body></html>"
)


class LivePage:
    """Serve the report in `folder` on http://HOST:PORT/ and reload open pages after each `published()`.

    The socket is bound here, so a busy port or a non-loopback host without `public` is an `InputError` (one
    sentence) before any round runs; port 0 picks a free port (`url` says which). `start()` serves in a daemon
    thread; `stop()` (or leaving the `with` block) ends it within `stop_seconds`. `poll_seconds`: how often an open
    page asks whether a new round has been published."""

    def __init__(
        self,
        folder: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        public: bool = False,
        poll_seconds: float = 3.0,
    ) -> None:
        refuse_exposed_host(host, public, exposes="the monitor's report")
        if not poll_seconds > 0:
            raise ValueError(f"poll_seconds must be positive, not {poll_seconds}")
        self.folder = Path(folder)
        self.host = host
        self.poll_seconds = poll_seconds
        self.host_check = HostCheck.serving(host, public)
        self._lock = threading.Lock()
        self._round = 0
        self._updated: datetime | None = None
        self._thread: threading.Thread | None = None
        self._server = _LiveServer(self, host, port)
        self.port: int = self._server.server_address[1]

    @property
    def url(self) -> str:
        """Where the page is: http://127.0.0.1:PORT/."""
        return server_url(self.host, self.port) + "/"

    @property
    def round(self) -> int:
        """How many rounds have been published (0 before the first)."""
        with self._lock:
            return self._round

    def published(self) -> int:
        """Say that a round has written its report: open pages reload within `poll_seconds`. Returns the round."""
        with self._lock:
            self._round += 1
            self._updated = datetime.now(timezone.utc)
            return self._round

    def start(self) -> LivePage:
        """Serve in a daemon thread (it never keeps the process alive); a second call does nothing."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True, name="mhaudit-live-page"
            )
            self._thread.start()
        return self

    def stop(self, stop_seconds: float = 5.0) -> None:
        """Stop serving and close the socket; waits at most `stop_seconds` for the serving thread. Idempotent."""
        thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            self._server.shutdown()  # returns once serve_forever's loop has seen it (every 0.1 s)
            thread.join(stop_seconds)
        self._server.server_close()

    def __enter__(self) -> LivePage:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    # --- what the handler serves ------------------------------------------------------------------------
    def state(self) -> dict[str, int | str | None]:
        """The /round answer."""
        with self._lock:
            updated = self._updated.isoformat(timespec="seconds").replace("+00:00", "Z") if self._updated else None
            return {"round": self._round, "updated": updated}

    def page_html(self) -> str:
        """report.html with the status line and the script; before the first report, the waiting page."""
        with self._lock:
            n, updated = self._round, self._updated
        try:
            report = (self.folder / "report.html").read_text(encoding="utf-8")
            written = datetime.fromtimestamp((self.folder / "report.html").stat().st_mtime, timezone.utc)
        except FileNotFoundError:
            report, written = WAITING_PAGE, None
        if n and updated:
            line = f"live: round {n}, updated {updated:%H:%M} UTC"
        elif written:
            line = f"live: a report written {written:%Y-%m-%d %H:%M} UTC, before this run; waiting for its first round"
        else:
            line = "live: waiting for the first round"
        status = (
            f"{STATUS_STYLE}<div id='mhaudit-live' role='status' data-round='{n}' data-poll='{self.poll_seconds:g}' "
            f"title='This page asks the monitor every {self.poll_seconds:g} s whether a round has ended, and reloads "
            f"itself when one has.'>{html.escape(line)}</div><script src='/live.js' defer></script>"
        )
        if "<body>" in report:
            return report.replace("<body>", "<body>" + status, 1)
        return status + report

    def report_file(self, path: str) -> Path | None:
        """The file a URL path names, when it is one of the report's own files (see the module's docstring)."""
        parts = unquote(path).lstrip("/").split("/")
        if any(not p or p.startswith(".") or "\\" in p or "\0" in p for p in parts):
            return None
        if len(parts) == 1 and parts[0] in REPORTS:
            name = parts[0]
        elif len(parts) == 2 and parts[0] in FOLDERS and parts[1].lower().endswith(FOLDERS[parts[0]]):
            name = "/".join(parts)
        else:
            return None
        root = self.folder.resolve()
        file = (root / name).resolve()  # a link out of the folder resolves outside it
        return file if file.is_relative_to(root) and file.is_file() else None


class _Refusal(Exception):
    def __init__(self, status: int, sentence: str) -> None:
        super().__init__(sentence)
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    server_version = "mhaudit-live"
    sys_version = ""
    default_request_version = "HTTP/1.0"  # a garbled request line still gets a status line (not HTTP/0.9)
    server: _LiveServer

    def setup(self) -> None:
        self.timeout = 30.0  # type: ignore[misc]  # a client that stalls is dropped, not waited on forever
        super().setup()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the library prints nothing)
        return

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's refusals as one sentence: an unknown method is a 405 (not 501), an unknown HTTP
        version a 400 (not 505); its own message, which may quote the request, is not shown."""
        status = {501: 405, 505: 400}.get(code, code)
        self.close_connection = True
        self._send(status, REFUSALS.get(status, "the request could not be read").encode(), "text/plain; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        if status == 405:
            self.send_header("Allow", "GET, HEAD")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802  (the standard library's name)
        if "Content-Length" in self.headers or "Transfer-Encoding" in self.headers:
            self.close_connection = True  # a body where none is expected: not read, the connection not reused
        try:
            body, content_type = self._answer(self.server.page)
            self._send(200, body, content_type)
        except _Refusal as refusal:
            self._send(refusal.status, str(refusal).encode(), "text/plain; charset=utf-8")
        except (BrokenPipeError, ConnectionResetError):
            return
        except OSError:  # the folder unreadable, or a file replaced between the check and the read
            self._send(
                503, b"the report could not be read; try again after the next round", "text/plain; charset=utf-8"
            )
        except Exception:  # a bug: the page keeps serving, and says so in one sentence
            self._send(500, b"internal error in mhaudit's live page", "text/plain; charset=utf-8")

    do_HEAD = do_GET

    def _answer(self, page: LivePage) -> tuple[bytes, str]:
        if not page.host_check.allows(self.headers.get("Host", "")):
            raise _Refusal(400, "this server answers only to the address it printed")
        path = urlsplit(self.path).path
        if path in ("/", "/report.html"):
            return page.page_html().encode("utf-8"), CONTENT_TYPES[".html"]
        if path == "/round":
            return json.dumps(page.state()).encode(), CONTENT_TYPES[".json"]
        if path == "/live.js":
            return LIVE_JS, "text/javascript; charset=utf-8"
        if path == "/favicon.ico":  # none: an empty answer, not a 404 in the browser's console
            return b"", "image/x-icon"
        file = page.report_file(path)
        if file is None:
            raise _Refusal(404, "no such file in the report")
        try:
            return file.read_bytes(), CONTENT_TYPES[file.suffix.lower()]
        except FileNotFoundError:  # replaced by the next round between the check and the read
            raise _Refusal(404, "no such file in the report") from None


class _LiveServer(ThreadingHTTPServer):
    daemon_threads = True  # a request in flight never keeps the process alive
    block_on_close = False  # server_close() does not wait for requests in flight

    def __init__(self, page: LivePage, host: str, port: int) -> None:
        self.page = page
        self.address_family = address_family(host)
        try:
            super().__init__((bind_address(host), port), _Handler)
        except OSError as exc:
            raise listen_error(host, port, exc, flag="--serve PORT") from None

    def handle_error(self, request: object, client_address: object) -> None:
        """A request that failed outside the handler's own catch (a client gone mid-answer): nothing to print."""
        return
