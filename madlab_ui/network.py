"""The address students' devices use to reach this server (the poll link on the projector).

A teacher who opened the app as http://localhost:8501 sees a link that a phone cannot follow: a
loopback host (localhost, 127.x, ::1) is swapped for this machine's network address, found the way
Streamlit finds its own "Network URL" (`streamlit.net_util.get_internal_ip`: the local end of a UDP
socket "connected" to a public address; no packet is sent, no internet is needed). When the server
listens on loopback only (`server.address` set to it) or no network address is found, the loopback
link is kept and the caller says that students need the computer's network address.

What it must not do: make a network request, or guess an address Streamlit would not print.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from streamlit import config, net_util

LOOPBACK = {"localhost", "::1", "ip6-localhost"}
ANY = {"", "0.0.0.0", "::"}  # a server bound to every interface


def is_loopback(host: str | None) -> bool:
    host = (host or "").strip("[]").lower()
    return host in LOOPBACK or host.startswith("127.")


def network_host() -> str | None:
    """This machine's address on its network, if students' devices can reach this server by it."""
    bound = config.get_option("server.address") if config.is_manually_set("server.address") else ""
    if bound not in ANY:  # bound to one interface: that one, unless it is loopback only
        return None if is_loopback(bound) else bound
    found = net_util.get_internal_ip()
    return None if not found or is_loopback(found) else found


def student_netloc(netloc: str) -> tuple[str, bool]:
    """(the host[:port] students should use, whether it reaches this server from another device):
    `netloc` itself unless its host is loopback, else the network address on the same port."""
    try:
        parts = urlsplit(f"//{netloc}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return netloc, True
    if not is_loopback(host):
        return netloc, True
    found = network_host()
    if found is None:
        return netloc, False
    found = f"[{found}]" if ":" in found else found
    return (f"{found}:{port}" if port else found), True
