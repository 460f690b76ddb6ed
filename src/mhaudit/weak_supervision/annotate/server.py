"""The annotation web app's HTTP side: a standard-library server that routes each request to the app
(`mhaudit.weak_supervision.annotate.app`: state, Jinja2 pages, a little vanilla JavaScript).

Routes (TOKEN is a person's secret; every page and call of a person lives under /s/TOKEN/):

    GET  /                          a landing page that says nothing about the sample
    GET  /static/app.js|app.css     the script and the style sheet (/favicon.ico: 204)
    GET  /s/TOKEN/                  annotator: redirect to the first unlabelled item; adjudicator: the disagreements
    GET  /s/TOKEN/item/N            annotator: item N (1-based) of the annotation order
    GET  /s/TOKEN/done              annotator: everything labelled
    GET  /s/TOKEN/guidelines        the guidelines (?from=item/N: where "back" returns)
    POST /s/TOKEN/api/label         annotator: save one answer  {token, item_id, task, value, tags, note}
    POST /s/TOKEN/api/consensus     adjudicator: record a consensus  {token, item_id, task, value, tags, note}
    POST /s/TOKEN/api/agreed        adjudicator: record the agreed items as consensus  {token}

Safety (docs/annotation.md, "Tokens and privacy"): loopback only unless `public` and the Host header checked (the
rules of `mhaudit.core.serving`, which the monitor's live page follows too), a POST carries the token in its JSON
body, strict security headers, and no token or text in any log line.

Hostile input (tests/weak_supervision/annotate/test_annotate_fuzz.py, docs/faults.md): a POST body is capped
at MAX_BODY bytes (413) and read before any other check; input left unread by a refusal is drained before the
socket closes (`Handler.finish`), so that the client gets the answer and not a reset; every refusal is a 4xx
with one sentence (an unknown method: 405, never the standard library's 501); a bug answers 500 and the
terminal gets the exception's type and line, never its message, which may quote the request.
"""

from __future__ import annotations

import hmac
import json
import re
import sys
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from mhaudit.core.errors import InputError
from mhaudit.core.serving import (
    HostCheck,
    address_family,
    bind_address,
    listen_error,
    refuse_exposed_host,
    server_url,
)
from mhaudit.weak_supervision.annotate.app import AnnotationApp, HTTPError
from mhaudit.weak_supervision.annotate.tokens import Person

MAX_BODY = 64 * 1024
MAX_DISCARD = 1024 * 1024  # unread input up to this size is dropped after a refusal (see Handler.finish)
CONTENT_LENGTH = re.compile(r"[0-9]{1,15}")
PARSER_REFUSALS = {  # the standard library's own refusals (bad request line, headers too long, unknown method)
    400: "the request could not be read as HTTP/1.0 or HTTP/1.1",
    405: "this server answers GET, HEAD and POST only",
    408: "the request did not arrive in time",
    414: "the address is too long",
    431: "the request headers are too large",
}
BACK_TO = re.compile(r"item/\d{1,9}|done|adjudicate")  # where the guidelines' "back" may lead: our own pages only
STATIC_DIR = Path(__file__).resolve().parent / "static"
STATIC = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Handler(BaseHTTPRequestHandler):
    server_version = "mhaudit-annotate"
    sys_version = ""
    default_request_version = "HTTP/1.0"  # a garbled request line still gets a status line (not HTTP/0.9)
    server: AnnotationServer
    unread = False  # the request may have input we did not read (a refused body, a bad request line)

    def finish(self) -> None:
        """A lingering close: closing a socket with unread input resets the connection, and the client may lose
        the answer it was sent. After a refusal, read (and drop) what is still arriving, then close."""
        super().finish()
        if self.unread:
            self.connection.settimeout(1.0)
            left = MAX_DISCARD
            try:
                while left > 0 and (chunk := self.connection.recv(65536)):
                    left -= len(chunk)
            except OSError:
                pass

    def setup(self) -> None:
        # A socket timeout: a client that connects and then stalls (or sends a request slowly) is dropped
        # after `request_timeout` seconds of silence instead of holding a thread forever.
        self.timeout = self.server.request_timeout  # type: ignore[misc]  # typeshed's ClassVar; setup() reads self's
        super().setup()

    @property
    def app(self) -> AnnotationApp:
        assert self.server.app is not None, "a server serves once open_session has set its app"
        return self.server.app

    # http.server logs every request with its full path (our tokens) to stderr: never do that.
    def log_message(self, format: str, *args) -> None:  # noqa: A002
        return

    def log_request(self, code="-", size="-") -> None:
        if self.app.settings.log_requests:
            parts = urlsplit(getattr(self, "path", "")).path.split("/")  # no path: the request line was unreadable
            if len(parts) > 2 and parts[1] == "s":
                parts[2] = "…"
            self.app.notify(f"{self.command} {'/'.join(parts)[:200]} {int(code) if str(code).isdigit() else code}")

    # --- responses -------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {**SECURITY_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _html(self, status: int, html: str, extra: dict[str, str] | None = None) -> None:
        self._send(status, html.encode("utf-8"), "text/html; charset=utf-8", extra)

    def _json(self, status: int, payload: dict, extra: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode("utf-8"), "application/json", extra)

    def _error(self, status: int, message: str, *, api: bool) -> None:
        extra = {"Allow": "GET, HEAD, POST"} if status == 405 else None
        if api:
            self._json(status, {"ok": False, "error": message}, extra)
        else:
            title = HTTPStatus(status).phrase
            self._html(status, self.app.render("error.html", status=status, title=title, message=message), extra)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's refusals, as our own error page: an unknown method is a 405 (not 501), an
        unknown HTTP version a 400 (not 505); its message, which may quote the request, is not shown."""
        status = {501: 405, 505: 400}.get(code, code)
        self.close_connection = self.unread = True
        self._error(status, PARSER_REFUSALS.get(status, "the request could not be read"), api=False)

    # --- dispatch --------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        app = self.app
        path = urlsplit(self.path).path
        parts = [p for p in path.split("/") if p]
        api = self.command == "POST"
        try:
            if not api and ("Content-Length" in self.headers or "Transfer-Encoding" in self.headers):
                self.close_connection = self.unread = True  # a body where none is expected: not read
            body = self._read_body() if api else b""
            if not self.server.host_allowed(self.headers.get("Host", "")):
                raise HTTPError(400, "this server answers only to the address it printed")
            if api and (len(parts) < 3 or parts[0] != "s"):
                raise HTTPError(405, "only the /s/TOKEN/api/ calls take a POST")
            if not parts:
                return self._html(200, app.render("landing.html"))
            if parts == ["favicon.ico"]:
                return self._send(204, b"", "image/x-icon")
            if parts[0] == "static" and len(parts) == 2 and parts[1] in STATIC and self.command == "GET":
                return self._send(200, (STATIC_DIR / parts[1]).read_bytes(), STATIC[parts[1]])
            if parts[0] != "s" or len(parts) < 2:
                raise HTTPError(404, "no such page")
            token, rest = parts[1], parts[2:]
            person = app.resolve(token)
            if person is None:
                app.notify(
                    "refused a request with an unknown token (HTTP 403): the link is mistyped or was "
                    "replaced by --new-tokens; hand out the links printed when the server started",
                    throttle=True,
                )
                raise HTTPError(
                    403, "This link is not valid. Ask the person who runs `mhaudit annotate` for your personal link."
                )
            base = f"/s/{token}/"
            if api:
                return self._json(200, self._post(app, person, token, rest, base, body))
            return self._get(app, person, rest, base)
        except HTTPError as exc:
            return self._error(exc.status, str(exc), api=api)
        except InputError as exc:  # e.g. the label store is locked by another process
            app.notify(f"could not save: {exc}")
            return self._error(503, "The label could not be saved; see the terminal running mhaudit.", api=api)
        except (BrokenPipeError, ConnectionResetError):
            return None
        except Exception as exc:  # a bug: keep serving, say so in the terminal (no request data)
            app.notify(f"internal error in the annotation app: {where(exc)}")
            return self._error(500, "Internal error; see the terminal running mhaudit.", api=api)

    do_GET = do_HEAD = do_POST = _dispatch

    def _read_body(self) -> bytes:
        """The POST body, read before any other check (so that a refusal leaves nothing unread), at most
        MAX_BODY bytes; a body that cannot be read is left to `finish`."""
        self.close_connection = self.unread = True  # until the body is read
        if self.headers.get("Transfer-Encoding"):
            raise HTTPError(411, "send the body with a Content-Length (no Transfer-Encoding)")
        values = self.headers.get_all("Content-Length") or []
        if not values:
            raise HTTPError(411, "Content-Length required")
        if len(values) > 1 or not CONTENT_LENGTH.fullmatch(values[0].strip()):
            raise HTTPError(400, "the Content-Length must be one whole number of bytes")
        length = int(values[0])
        if length > MAX_BODY:
            raise HTTPError(413, f"the request body is larger than {MAX_BODY} bytes")
        if length == 0:
            raise HTTPError(400, "the request body is empty")
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            raise HTTPError(408, "the request body did not arrive in time") from None
        if len(body) < length:
            raise HTTPError(400, "the request body ended before its Content-Length")
        self.unread = False
        return body

    def _get(self, app: AnnotationApp, person: Person, rest: list[str], base: str) -> None:
        if rest == ["guidelines"]:  # "back" returns to the page the person came from (?from=item/3)
            came_from = parse_qs(urlsplit(self.path).query).get("from", [""])[0]
            back = base + came_from if BACK_TO.fullmatch(came_from) else base
            return self._html(
                200, app.render("guidelines.html", person=person, base=base, back=back, guidelines=app.guidelines_html)
            )
        if person.role == "adjudicator":
            if rest in ([], ["adjudicate"]):
                return self._html(200, app.adjudication_page(person, base))
            raise HTTPError(
                403 if rest and rest[0] in ("item", "done") else 404,
                "This link belongs to the adjudicator, who sees the disagreements only.",
            )
        if rest == []:
            position = app.resume_position(person.name)
            return self._send(
                303,
                b"",
                "text/plain; charset=utf-8",
                {"Location": f"{base}item/{position}" if position else f"{base}done"},
            )
        if len(rest) == 2 and rest[0] == "item":
            return self._html(200, app.item_page(person, base, app.item_at(rest[1])))
        if rest == ["done"]:
            return self._html(
                200,
                app.render(
                    "done.html",
                    person=person,
                    base=base,
                    n=len(app.items),
                    n_done=len(app.labelled(person.name) & app.by_key.keys()),
                    resume=app.resume_position(person.name),
                ),
            )
        if rest == ["adjudicate"]:
            raise HTTPError(403, "Annotators do not see the adjudication view.")
        raise HTTPError(404, "no such page")

    def _post(self, app: AnnotationApp, person: Person, token: str, rest: list[str], base: str, raw: bytes) -> dict:
        body = self._read_json(token, raw)
        if rest == ["api", "label"]:
            return app.save_label(person, body, base)
        if rest == ["api", "consensus"]:
            return app.save_consensus(person, body)
        if rest == ["api", "agreed"]:
            return app.save_agreed(person)
        raise HTTPError(404, "no such call")

    def _read_json(self, token: str, raw: bytes) -> dict:
        if not self.headers.get("Content-Type", "").split(";")[0].strip().lower() == "application/json":
            raise HTTPError(415, "send JSON")
        origin = self.headers.get("Origin")
        if origin and origin != "null" and netloc(origin) != self.headers.get("Host", ""):
            raise HTTPError(403, "cross-site request refused")
        try:
            body = json.loads(raw)
            # a lone surrogate ("\ud800") parses but cannot be stored as UTF-8: refuse it here
            json.dumps(body, ensure_ascii=False).encode("utf-8")
        except (ValueError, RecursionError):  # UnicodeError is a ValueError; deep nesting, a RecursionError
            raise HTTPError(400, "the request body is not JSON in UTF-8") from None
        if not isinstance(body, dict):
            raise HTTPError(400, "the request body must be a JSON object")
        presented = body.get("token")
        if not isinstance(presented, str) or not hmac.compare_digest(presented.encode(), token.encode()):
            raise HTTPError(403, "the request does not carry this page's token")
        return body


def netloc(url: str) -> str | None:
    try:
        return urlsplit(url).netloc
    except ValueError:  # "http://[" and the like
        return None


def where(exc: BaseException) -> str:
    """An exception's type and the line that raised it: its message may quote the request (post text)."""
    frames = traceback.extract_tb(exc.__traceback__)
    last = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{last}"


class AnnotationServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_timeout: float = 30.0  # seconds a connection may stay silent (see Handler.setup)

    def __init__(self, app: AnnotationApp | None, host: str = "127.0.0.1", port: int = 8765, *, public: bool = False):
        self.check_host(host, public)
        self.app = app  # may be set after binding (open_session binds before issuing tokens)
        self.public = public
        self.host = host
        self.address_family = address_family(host)
        try:
            super().__init__((bind_address(host), port), Handler)
        except OSError as exc:
            raise listen_error(host, port, exc) from None
        self.port = self.server_address[1]
        self._host_check = HostCheck.serving(host, public)

    @staticmethod
    def check_host(host: str, public: bool) -> None:
        """Loopback only unless `public` (mhaudit.core.serving, the rule every server of mhaudit follows)."""
        refuse_exposed_host(host, public, exposes="the post texts")

    def host_allowed(self, header: str) -> bool:
        """The Host header names the address served (DNS rebinding; mhaudit.core.serving)."""
        return self._host_check.allows(header)

    def handle_error(self, request, client_address) -> None:
        """An exception outside the handler's own catch (socketserver would print a traceback): one line."""
        exc = sys.exc_info()[1]
        if self.app is not None and exc is not None and not isinstance(exc, (ConnectionError, TimeoutError)):
            self.app.notify(f"internal error in the annotation server: {where(exc)}")

    def base_url(self) -> str:
        return server_url(self.host, self.port)

    def url_for(self, token: str) -> str:
        return f"{self.base_url()}/s/{token}/"

    def start_background(self) -> threading.Thread:
        """Serve in a daemon thread (tests, notebooks); `shutdown()` and `server_close()` stop it."""
        thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True, name="mhaudit-annotate"
        )
        thread.start()
        return thread
