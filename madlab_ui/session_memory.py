"""A page that remembers: a session token in the URL, and the form and the watched debate kept
server-side under it, so a reload or a second tab shows what the first showed.

Streamlit forgets `st.session_state` when the browser reloads (a reload is a new session). So every
page keeps `?session=<token>` in its URL; the token is the session's owner id (`common.owner_id`),
so a reloaded tab still owns the debates it started. The Debate page adds `debate=<id>` while it
watches a debate. The form's values (every key the form registers with `remember_keys`: its fields and
`forms.FORM_EXTRA`; a pending fork), the watched debate's id and the name a student predicted under on the Poll page are kept in this server process under the token: a dict
behind a lock (the Streamlit server is one long-lived process; sessions run in their own threads).
A new session that arrives with a token gets them back before any widget is drawn. The session keeps its
own copy too (`KEPT`, a plain key): `forms.keep_form_state` takes a field Streamlit dropped on a page switch
from it.

A visitor (`access.is_visitor`: another machine without the teacher key) keeps its values in a slot of
its own (`slot`): a visitor who copied the projected address, the teacher's token in it, neither gets the
teacher's form back nor writes over what the teacher's reload brings back; holding the token lets it
steer nothing (a visitor never steers, `access.can_steer`).

What it must not do: keep anything but the form's plain values and a debate id (no live objects,
no model output), write the store, or draw anything. It is forgotten when the server restarts;
the `debate` parameter still reattaches a stored debate then.
"""
from __future__ import annotations

import copy
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import streamlit as st

from . import access
from .common import ANNOTATOR_KEPT, DEBATE_ID, FORK_REQUEST, OWNER_ID, POLL_VOTER

TOKEN_PARAM = "session"  # URL parameter: the session token (= owner id)
DEBATE_PARAM = "debate"  # URL parameter: the debate the Debate page watches
MAX_SESSIONS = 500  # the oldest token's form is forgotten beyond this
KEPT = "form_kept"  # session key: what `remember` kept last (forms.keep_form_state restores a dropped key from it)
_TOKEN = re.compile(r"[0-9a-f]{32}")
_DEBATE = re.compile(r"[0-9A-Za-z_-]{1,64}")


class Memory:
    """Values per token, newest last; copies in and out, so no two sessions share a mutable value."""

    def __init__(self, limit: int = MAX_SESSIONS):
        self.limit = limit
        self._lock = threading.Lock()
        self._values: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def save(self, token: str, values: dict[str, Any]) -> None:
        values = copy.deepcopy(values)
        with self._lock:
            self._values[token] = values
            self._values.move_to_end(token)
            while len(self._values) > self.limit:
                self._values.popitem(last=False)

    def load(self, token: str) -> dict[str, Any]:
        with self._lock:
            values = self._values.get(token)
        return copy.deepcopy(values) if values is not None else {}


MEMORY = Memory()


# The keys shared between pages (named in `common`) are kept here; a module that owns more keys
# registers them when it is imported (`remember_keys`: the form's fields, `forms`), so this module
# imports none of its owners (no import circle). `page.page_setup` imports the form.
_SHARED_KEYS = (FORK_REQUEST, DEBATE_ID, POLL_VOTER, ANNOTATOR_KEPT)
_key_sources: list[Callable[[], Iterable[str]]] = []


def remember_keys(source: Callable[[], Iterable[str]]) -> None:
    """Register `source`: it gives session-state keys its module owns that a reload brings back (asked
    on every `remember`, so the keys may change). Registering the same source again changes nothing."""
    if source not in _key_sources:
        _key_sources.append(source)


def remembered_keys() -> list[str]:
    """The session-state keys a reload brings back: the registered owners' keys, then the shared ones."""
    return [*(key for source in _key_sources for key in source()), *_SHARED_KEYS]


def valid_token(value: Any) -> bool:
    return isinstance(value, str) and _TOKEN.fullmatch(value) is not None


def slot(token: str) -> str:
    """Where the memory keeps a token's values: a visitor's apart from the teacher's."""
    return f"visitor:{token}" if access.is_visitor() else token


def attach() -> None:
    """Give this session its token (the URL's, else a new one) and keep it in the URL. A new session
    arriving with a token gets the remembered form and debate back; `debate=<id>` in the URL wins
    over the remembered debate. Call before any widget is drawn."""
    if OWNER_ID not in st.session_state:  # a new session: a first visit, a reload or another tab
        token = st.query_params.get(TOKEN_PARAM)
        if valid_token(token):
            st.session_state[OWNER_ID] = token
            for key, value in MEMORY.load(slot(token)).items():
                st.session_state[key] = value
        else:
            st.session_state[OWNER_ID] = uuid.uuid4().hex
        debate = st.query_params.get(DEBATE_PARAM)
        if isinstance(debate, str) and _DEBATE.fullmatch(debate):
            st.session_state[DEBATE_ID] = debate
    token = st.session_state[OWNER_ID]
    if st.query_params.get(TOKEN_PARAM) != token:
        st.query_params[TOKEN_PARAM] = token


def remember() -> None:
    """Keep the session's form and watched debate under its token (cheap: plain values only), and a copy
    in the session itself (`KEPT`, a plain key Streamlit never drops)."""
    token = st.session_state.get(OWNER_ID)
    if not valid_token(token):
        return
    state = st.session_state
    values = {key: state[key] for key in remembered_keys() if key in state}
    MEMORY.save(slot(token), values)
    state[KEPT] = copy.deepcopy(values)


def show_watched_in_url() -> None:
    """The Debate page: `debate=<id>` in the URL while a debate is watched, no parameter otherwise."""
    watched = st.session_state.get(DEBATE_ID)
    if watched and st.query_params.get(DEBATE_PARAM) != watched:
        st.query_params[DEBATE_PARAM] = watched
    elif not watched and DEBATE_PARAM in st.query_params:
        del st.query_params[DEBATE_PARAM]
