"""Real receivers of the monitor's alerts on 127.0.0.1, for the tests: a JSON webhook (json://) and an SMTP server
(mailto://)."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WAIT_S = 120  # only stops a hang: a busy machine may take long to answer


class Receiver(ThreadingHTTPServer):
    """A JSON webhook on 127.0.0.1 (threads). It answers 500 to its first `failures` requests, then 200; only a
    request answered 200 is accepted (`bodies`). `hold`: each request waits until `release` is set, then is refused
    (500): a delivery in flight while the sender is killed."""

    def __init__(self, failures: int = 0, hold: bool = False):
        self.bodies: list[dict] = []
        self.requests, self.failures, self.hold = 0, failures, hold
        self.arrived, self.release = threading.Condition(), threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.arrived:
                    outer.requests += 1
                    ok = outer.requests > outer.failures and not outer.hold
                    if ok:  # accepted before it is answered: a sender that got 200 finds it here
                        outer.bodies.append(body)
                    outer.arrived.notify_all()
                if outer.hold:
                    outer.release.wait(WAIT_S)
                try:
                    self.send_response(200 if ok else 500)
                    self.end_headers()
                except OSError:  # the sender is gone
                    pass

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.server_address[1]}/hook"

    def wait_for_requests(self, n: int) -> None:
        with self.arrived:
            assert self.arrived.wait_for(lambda: self.requests >= n, WAIT_S), f"{self.requests} of {n} requests"

    def alerts(self) -> list[tuple[str, str]]:
        """(window, kind) of each accepted alert, by its alert id (model/window/kind)."""
        found = []
        for body in self.bodies:
            ident = re.search(r"Alert id: [^/]+/(\S+)/(\w+)$", body["message"], re.M)
            assert ident, body["message"]
            found.append((ident.group(1).replace("T", " "), ident.group(2)))
        return found

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.shutdown()
        self.server_close()


@contextlib.contextmanager
def smtp_inbox():
    """A real SMTP server (aiosmtpd) on 127.0.0.1: yields (the mailto:// URL to it, the inbox whose `mail` it
    fills)."""
    from aiosmtpd.controller import Controller

    class Inbox:
        def __init__(self):
            self.mail = []

        async def handle_DATA(self, server, session, envelope):
            self.mail.append(envelope)
            return "250 OK"

    with socket.socket() as probe:  # aiosmtpd's Controller needs a port number, not 0
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    inbox = Inbox()
    smtp = Controller(inbox, hostname="127.0.0.1", port=port)
    smtp.start()
    try:
        yield f"mailto://127.0.0.1:{port}?from=monitor@example.org&to=team@example.org&mode=insecure", inbox
    finally:
        smtp.stop()
