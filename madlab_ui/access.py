"""Who may do what in MAD Lab's web app: the teacher, a debate's owner, a visitor. One policy, asked by every page.

Roles
- teacher: a browser on this machine (its connection comes from a loopback address and carries no
  proxy header), or one that opened the app with the teacher key (`?teacher=KEY`: compared in
  constant time; the session keeps it, the URL drops it, a reload needs the key link again). The
  teacher opens every page: starts, resumes, forks, exports, reveals references.
- owner: the teacher session that started a live debate (the debate's `owner` is the session's
  token, `common.owner_id`). Only the owner steers it (pause, resume, stop, decide now, messages)
  and reveals its reference while it runs; another tab without the token, or a browser that has
  only `?debate=<id>`, watches read-only. A live debate with no owner (started outside a browser
  session) is steered by any teacher.
- visitor: anyone else (a student's phone on the network). Opens only the Poll page, Join (the poll or
  seat a typed code names, and later only what that device joined), a
  read-only view of the debate named in the link (the Debate page with `?debate=<id>`, the
  Presenter) and the Glossary (what the numbers mean; nothing of any debate); never steers, starts,
  deletes, exports, reveals a reference or lists debates.
- invited coder: a visitor who typed a coding project's coder invitation at /join (the lead's code,
  `mad_core.qda.invitations`). Besides a visitor's pages it opens the Coding page, and there only that
  project (`invited_project`): it picks a coder name (held by this browser session, never the lead's,
  the gold's or a model's name), codes turns and passages, writes memos, sees the Codebook (changes
  codes, reviews a model's proposals, but starts no model) and the Agreement tab as any coder who
  does not lead, blind mode included (the others' codings hidden until the lead reveals). It never
  sees the project list or another project, the archive's debates outside the project, adding
  debates, the lead's tabs (Disagreements, History), reveal, progress or the invitation itself, nor
  the Exchange tab (no export, no import), nor any teacher page. How it is remembered: the code rides
  in the Coding page's URL (`?invite=CODE`, so a reload finds it, as `poll=` and `device=` do for a
  joined poll) and in the session (`INVITED`, so the sidebar's Coding link keeps it); every run asks
  the store again, so once the lead retires the code the next step of that browser is refused with
  `INVITATION_GONE`, on whatever page it opens.

How the client is known: the TCP peer of the session's WebSocket (Streamlit's client context,
`remote_ip`). uvicorn swaps it for X-Forwarded-For only when the peer is a proxy on loopback,
which can only make a client look remote. A forwarding header (X-Forwarded-For, Forwarded,
X-Real-IP) never makes anyone a teacher: a connection that carries one is not taken as local.
`st.context.ip_address` is not used: it reads None both for a loopback browser and for no
connection at all. A script run with no browser connection (AppTest, bare mode) is the machine
itself, unless this session was seen connected from elsewhere before (that sticks).

The key lives in MADLAB_HOME (`teacher_key`, mode 0600), random per home; `startup_line` is the one
line that shows it (printed by scripts/run-app.sh through `python -m madlab_ui.access`).

What it must not do: draw anything but the one refusal line, write the store, or log the key.
"""
from __future__ import annotations

import argparse
import hmac
import ipaddress
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from mad_core import join_codes, live
from mad_core.live import LiveDebate
from mad_core.qda import invitations
from mad_core.store import Store, madlab_home
from mad_core.view import DebateView

from . import network
from .common import owner_id

TEACHER_PARAM = "teacher"  # URL parameter: the teacher key
KEY_FILE = "teacher_key"  # in MADLAB_HOME
HELD = "access_key_held"  # session key: this session presented the teacher key
SEEN_REMOTE = "access_seen_remote"  # session key: this session was seen connected from another machine
KEY_REFUSED = "access_key_refused"  # session key: a wrong key was presented (said once)
FORWARDING = ("x-forwarded-for", "forwarded", "x-real-ip")
# A visitor's pages: the Debate page read-only, the Presenter, the Poll, Join (a code and a nickname: it opens
# only what a code the teacher showed names, `mad_core.classroom`), and the Glossary (it shows no debate,
# setting or key: only what the numbers a visitor sees mean).
VISITOR_PAGES = ("Debate", "Presenter", "Poll", "Join", "Glossary")
CODING_PAGE = "Coding"  # an invited coder's page besides those (its project only: madlab_ui/coding.py)
INVITE_PARAM = "invite"  # URL parameter: the coder invitation the Coding page was opened with
INVITED = "access_coding_invite"  # session key: the coder invitation this session was admitted with
REFUSED = "This page is for the teacher only: open the link you were given (a poll or the projected debate)."
INVITATION_GONE = ("This coder invitation admits nobody now: the project's lead retired it, or the code is not "
                   "theirs. Ask the lead for the current code and type it at /join.")
READ_ONLY = "Only the session that started this debate can steer it."
VISITOR_HOME = "Open the link you were given: a poll, or the debate on the projector."
DEFAULT_PORT = 8501


# ----- the teacher key ---------------------------------------------------------------------------
def key_path(home: Path | None = None) -> Path:
    return (home or madlab_home()) / KEY_FILE


def teacher_key(home: Path | None = None) -> str:
    """This home's teacher key: read, or made once (random, the file readable by its owner only)."""
    path = key_path(home)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        key = secrets.token_urlsafe(24)
        out.write(key)
    return key


def key_matches(given: object, home: Path | None = None) -> bool:
    """Is `given` this home's teacher key? (constant time; anything but a non-empty str is not)."""
    if not isinstance(given, str) or not given:
        return False
    return hmac.compare_digest(given.encode("utf-8"), teacher_key(home).encode("utf-8"))


def startup_line(host: str, port: int, key: str) -> str:
    """The one line that shows the key: the link a teacher opens on another machine."""
    host = f"[{host}]" if ":" in host else host
    return f"Teacher key for other machines: http://{host}:{port}/?teacher={key}"


# ----- who is asking -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Client:
    """The browser connection of this script run: its peer address, whether a forwarding header came
    with it, and whether there is a connection at all."""

    address: str | None
    forwarded: bool = False
    connected: bool = True


def client() -> Client:
    """This session's browser connection, as the server saw it (tests replace this function)."""
    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():
        return Client(None, connected=False)
    session = runtime.get_instance().get_client(ctx.session_id)
    context = getattr(session, "client_context", None)
    address = getattr(context, "remote_ip", None)
    if context is None or not isinstance(address, (str, type(None))):  # no connection (AppTest's stand-in runtime)
        return Client(None, connected=False)
    names = {str(name).lower() for name, _ in context.headers}
    return Client(address, forwarded=any(name in names for name in FORWARDING))


def is_loopback_address(address: str | None) -> bool:
    """127.0.0.0/8, ::1, or IPv4-mapped loopback (::ffff:127.0.0.1); anything unparsable is not."""
    try:
        ip = ipaddress.ip_address((address or "").strip("[]").split("%")[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _take_key() -> None:
    """A `?teacher=KEY` in the URL: the session keeps a right key; the URL drops it either way."""
    if TEACHER_PARAM not in st.query_params:
        return
    given = st.query_params.get(TEACHER_PARAM)
    del st.query_params[TEACHER_PARAM]
    if key_matches(given):
        st.session_state[HELD] = True
        st.session_state.pop(KEY_REFUSED, None)
    else:
        st.session_state[KEY_REFUSED] = True


def is_local() -> bool:
    """Is this session's browser on this machine (see the module docstring)?"""
    seen = client()
    if not seen.connected:
        return not st.session_state.get(SEEN_REMOTE, False)
    local = is_loopback_address(seen.address) and not seen.forwarded
    if not local:
        st.session_state[SEEN_REMOTE] = True
    return local and not st.session_state.get(SEEN_REMOTE, False)


def is_teacher() -> bool:
    _take_key()
    return bool(st.session_state.get(HELD)) or is_local()


def is_visitor() -> bool:
    return not is_teacher()


# ----- what they may do ---------------------------------------------------------------------------
def owns(debate: LiveDebate) -> bool:
    """Did this session start `debate` (or has it no owner)? Says nothing about visitors."""
    return debate.owner is None or hmac.compare_digest(str(debate.owner).encode(), owner_id().encode())


def can_steer(debate: LiveDebate | None) -> bool:
    """Pause, resume, stop, decide now, message: the owner's (a teacher's) only."""
    return debate is not None and is_teacher() and owns(debate)


def may_reveal(view: DebateView) -> bool:
    """May this session reveal `view`'s reference answer? A teacher, once the debate has ended;
    while it runs (here or in another process), only its owner."""
    if not is_teacher():
        return False
    debate = live.get(view.debate_id) if view.debate_id else None
    if view.status != "running" and (debate is None or debate.done):
        return True
    return debate is not None and owns(debate)


def _invitation() -> str | None:
    """The coder invitation this session carries: its URL's, else the one it was admitted with."""
    typed = st.query_params.get(INVITE_PARAM) or st.session_state.get(INVITED)
    return typed if isinstance(typed, str) and typed else None


def invited_project() -> str | None:
    """The coding project this session's coder invitation admits it to now (asked of the store on
    every call: a retired code admits nobody), else None. A live code is kept in the session."""
    typed = _invitation()
    project = invitations.project_of(Store(), typed) if typed else None
    if project is not None:
        st.session_state[INVITED] = join_codes.normalize(typed)
    return project


def may_open(title: str) -> bool:
    """May this session open the page called `title` (navigation.PAGES)? A visitor with a live coder
    invitation opens the Coding page too (its project only)."""
    return title in VISITOR_PAGES or is_teacher() or (title == CODING_PAGE and invited_project() is not None)


def refuse() -> None:
    """The one line a page says to someone who may not open it; nothing else is drawn. A session
    whose coder invitation no longer admits is told that, not the teacher-only line."""
    gone = _invitation() is not None and invited_project() is None
    with st.container(key="access_refused"):
        st.markdown(INVITATION_GONE if gone else REFUSED)
    st.stop()


def require(title: str) -> None:
    """A page's guard (`page.page_setup` calls it): a session that may not open `title` gets the one line."""
    if not may_open(title):
        refuse()


def key_notice() -> None:
    """Say once that a wrong teacher key was presented (nothing about the right one)."""
    if st.session_state.pop(KEY_REFUSED, False):
        st.warning("That teacher key is not valid here: you see what a visitor sees.")


# ----- the line scripts/run-app.sh prints -----------------------------------------------------------
def _host_and_port(argv: list[str]) -> tuple[str, int]:
    """The server's address for other machines and its port, from `streamlit run`'s own options."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--server.address", dest="address", default="")
    parser.add_argument("--server.port", dest="port", type=int, default=DEFAULT_PORT)
    known, _ = parser.parse_known_args(argv)
    host = known.address if known.address not in network.ANY else (network.network_host() or "")
    return host or "localhost", known.port


def main(argv: list[str]) -> int:
    """The lines scripts/run-app.sh prints before the server starts (Streamlit's own welcome lines are
    off: they look up an external address on the internet, see .streamlit/config.toml)."""
    host, port = _host_and_port(argv)
    print(f"MAD Lab on this machine: http://localhost:{port}", flush=True)
    if host != "localhost":
        shown = f"[{host}]" if ":" in host else host
        print(f"Poll links and students' devices: http://{shown}:{port}", flush=True)
    print(startup_line(host, port, teacher_key()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
