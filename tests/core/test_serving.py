"""The address rules of mhaudit's local servers (mhaudit.core.serving): loopback only unless public, the Host
header checked against the address served (DNS rebinding), one sentence for a port that cannot listen. The
annotation app and the monitor's live page use these (tests/weak_supervision/annotate,
tests/report/test_live_page.py)."""

from __future__ import annotations

import errno
import socket

import pytest

from mhaudit.core.errors import InputError
from mhaudit.core.serving import (
    HostCheck,
    address_family,
    bind_address,
    is_loopback,
    listen_error,
    refuse_exposed_host,
    server_url,
)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost", "LocalHost"])
def test_loopback_addresses(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.org", "localhost.evil.example", ""])
def test_other_addresses_are_not_loopback(host):
    assert not is_loopback(host)


def test_a_non_loopback_host_needs_public():
    with pytest.raises(InputError, match=r"^refusing to serve on '0\.0\.0\.0'.*could reach the report; pass --public"):
        refuse_exposed_host("0.0.0.0", False, exposes="the report")
    refuse_exposed_host("0.0.0.0", True, exposes="the report")
    refuse_exposed_host("::1", False, exposes="the report")


def test_the_host_header_must_name_the_address_served():
    check = HostCheck.serving("127.0.0.1")
    for header in ("127.0.0.1", "127.0.0.1:8765", "localhost:8765", "LOCALHOST", "[::1]:8765"):
        assert check.allows(header), header
    for header in ("", "evil.example", "evil.example:8765", "127.0.0.1.evil.example", "[::1", "10.0.0.1:8765"):
        assert not check.allows(header), header
    named = HostCheck.serving("192.168.1.5", public=False)
    assert named.allows("192.168.1.5:80") and not named.allows("localhost:80")
    assert HostCheck.serving("0.0.0.0", public=True).allows("anything.example:1")
    assert HostCheck.serving("[::1]").allows("[::1]:9000")


def test_urls_addresses_and_the_listen_sentence():
    assert server_url("127.0.0.1", 8765) == "http://127.0.0.1:8765"
    assert server_url("::1", 80) == server_url("[::1]", 80) == "http://[::1]:80"
    assert bind_address("[::1]") == "::1" and address_family("[::1]") == socket.AF_INET6
    assert address_family("127.0.0.1") == socket.AF_INET
    error = listen_error("127.0.0.1", 80, OSError(errno.EADDRINUSE, "Address already in use"), flag="--serve PORT")
    assert str(error) == "cannot listen on 127.0.0.1:80 (Address already in use); pick another --serve PORT"
