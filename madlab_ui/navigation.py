"""The app's pages with their names in the sidebar (Debate, Transcripts, Compare, Models, ...: PAGES).

Without `st.navigation` Streamlit names the entry page after its file ("app"). Here `app.py` is both
the router and the Debate page: Streamlit runs the entry file on every rerun, `route()` builds the
navigation and runs the chosen page; when that page is the Debate page it is `app.py` itself, run
again by `Page.run`, and inside that run `route()` steps aside (returns False) so the page body is
drawn. Keeping the Debate page in `app.py` keeps `st.switch_page("app.py")` (common.DEBATE_PAGE) and
AppTest's `switch_page(APP)` working, and its URL at "/". The other pages keep their URLs
("/Transcripts", ...).

`arrive_at_top()` is for a page reached by `st.switch_page` from a scrolled page (a fork made far
down a transcript): the browser keeps the old scroll position and, at times, the old page's address.

What it must not do: draw anything itself (but `arrive_at_top`'s static script), or run a page other
than the one st.navigation chose.
"""
from __future__ import annotations

import json
import threading

import streamlit as st

from . import access
from .common import ROOT

# (file relative to app.py, title, icon, url path); the first one is the default page, served at "/".
# Emoji, not Material icons: a page's icon is also the tab's favicon, and Streamlit's browser code
# fetches a Material favicon from fonts.gstatic.com (a request offline), while an emoji favicon is
# drawn locally (an SVG data URL).
PAGES = [
    ("app.py", "Debate", "💬", None),
    ("pages/1_Transcripts.py", "Transcripts", "📜", "Transcripts"),
    ("pages/2_Compare.py", "Compare", "🆚", "Compare"),
    ("pages/3_Models.py", "Models", "🤖", "Models"),
    ("pages/4_Experiments.py", "Experiments", "🧪", "Experiments"),
    ("pages/8_Coding.py", "Coding", "🏷️", "Coding"),
    ("pages/5_Presenter.py", "Presenter", "📽️", "Presenter"),
    ("pages/6_Poll.py", "Poll", "🗳️", "Poll"),
    ("pages/9_join.py", "Join", "🔑", "join"),  # its file named as its URL: a first load of /join finds it
    ("pages/7_Glossary.py", "Glossary", "📖", "Glossary"),
]

_inside = threading.local()  # set while the chosen page runs (each session's script runs in its own thread)


def route() -> bool:
    """In the entry file's own run: run the chosen page and return True. Inside the Debate page's
    run (app.py executed as the page): return False, so the caller draws the page."""
    if getattr(_inside, "page", False):
        return False
    pages = [st.Page(str(ROOT / path), title=title, icon=icon, default=url is None,
                     **({"url_path": url} if url else {}))
             for path, title, icon, url in PAGES]
    visitor = access.is_visitor()
    chosen = st.navigation(pages, position="hidden" if visitor else "sidebar")
    if visitor:
        if not access.may_open(chosen.title):
            access.refuse()  # one line; the page is not run
        for page in pages:
            if access.may_open(page.title):
                st.sidebar.page_link(page)
    _inside.page = True
    try:
        chosen.run()
    finally:
        _inside.page = False
    return True


# Our own static script (the page paths are ours): scroll the main area to the top and, when the address
# still names another page (".../Transcripts?session=..."), put the Debate page's ("/?session=...") there.
_TO_TOP_JS = """<script>
(() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (main) main.scrollTo(0, 0);
  window.scrollTo(0, 0);
  const others = %s, loc = window.location, parts = loc.pathname.replace(/\\/$/, "").split("/");
  if (others.includes(parts[parts.length - 1])) {
    parts.pop();
    window.history.replaceState(window.history.state, "", parts.join("/") + "/" + loc.search + loc.hash);
  }
})();
</script>"""


def arrive_at_top() -> None:
    """On the Debate page reached by a switch from a scrolled page: open it at the top, at its address."""
    others = [url for _, _, _, url in PAGES if url]
    st.html(_TO_TOP_JS % json.dumps(others), unsafe_allow_javascript=True)
