"""The address rules every local HTTP server of mhaudit follows (the annotation app, the monitor's live page).

- **Loopback unless asked.** A server binds a loopback address (127.0.0.1, ::1, localhost) unless the person passes
  `public`: anyone on the network could otherwise read what it serves (`refuse_exposed_host`).
- **The Host header checked** (`HostCheck`): a request must name the address the server printed. A web page on
  another site cannot then reach a loopback server through a name of its own that resolves to 127.0.0.1 (DNS
  rebinding). With `public` any name is accepted: the person chose to be reachable.
- **A busy port is one sentence** (`listen_error`), naming the flag that picks another.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from mhaudit.core.errors import InputError

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback(host: str) -> bool:
    """True for "localhost" and any loopback IP address (127.0.0.0/8, ::1), with or without IPv6 brackets."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def refuse_exposed_host(host: str, public: bool, *, exposes: str, flag: str = "--public") -> None:
    """Raise `InputError` when `host` is not a loopback address and `public` was not asked for; `exposes` says what
    the network could read ("the post texts")."""
    if not public and not is_loopback(host):
        raise InputError(
            f"refusing to serve on '{host}', which is not a loopback address: anyone on the network "
            f"could reach {exposes}; pass {flag} if that is intended"
        )


@dataclass(frozen=True)
class HostCheck:
    """Which Host headers a server answers: the name it binds (and, on loopback, the other loopback names), or any
    name when it is `public`."""

    names: frozenset[str]
    public: bool = False

    @classmethod
    def serving(cls, host: str, public: bool = False) -> HostCheck:
        loopback = LOOPBACK_NAMES if is_loopback(host) else frozenset()
        return cls(frozenset({host.strip("[]").lower()}) | loopback, public)

    def allows(self, header: str) -> bool:
        """Whether a request whose Host header is `header` ("127.0.0.1:8765", "[::1]:80", "") may be answered."""
        if self.public:
            return True
        try:
            name = urlsplit(f"//{header}").hostname or ""
        except ValueError:  # "[::1" and the like
            return False
        return name.lower() in self.names


def address_family(host: str) -> socket.AddressFamily:
    """IPv6 for an address with a colon ("::1", "[::1]"), else IPv4."""
    return socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET


def bind_address(host: str) -> str:
    """The host as a socket takes it: IPv6 without its brackets."""
    return host.strip("[]")


def server_url(host: str, port: int) -> str:
    """http://HOST:PORT, with an IPv6 address in brackets."""
    bare = host.strip("[]")
    return f"http://{f'[{bare}]' if ':' in bare else bare}:{port}"


def listen_error(host: str, port: int, exc: OSError, *, flag: str = "--port") -> InputError:
    """The one sentence for a socket that cannot listen (a busy port, an address not on this machine)."""
    return InputError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another {flag}")
