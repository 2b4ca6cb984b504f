"""Glossary: what every metric and column MAD Lab shows means (`mad_core/glossary.py`), with a search
box (`glossary_search`). Each entry is a box keyed `glossary_<id>` (`glossary.entry_id`): its name, one
plain-words sentence, then its formula and where it comes from. README.md's Glossary section holds the
same entries.

Anyone may open it, a visitor from another machine too (madlab_ui/access.py): it shows no debate, no
setting and no key, only the explanations. What it must not do: render any text as HTML or Markdown of
its own (every text is escaped with `md_escape`), read the store, or change anything.
"""
from __future__ import annotations

import streamlit as st

from mad_core import glossary
from madlab_ui.common import md_escape
from madlab_ui.page import page_setup

page_setup("Glossary")
st.title("Glossary")
st.caption("What every number on a page, a chart or a CSV means: one sentence in plain words, then how it is "
           "computed and the paper it comes from (seed 000 … 004: README, section \"The papers\").")
query = st.text_input("Search", key="glossary_search", placeholder="a metric or a column, e.g. Holm or answer_read")
found = glossary.search(query)
if not found:
    st.info("Nothing matches: try one word of the name, or clear the search.")
for group in glossary.GROUPS:
    entries = [entry for entry in found if entry["group"] == group]
    if not entries:
        continue
    st.subheader(group)
    for entry in entries:
        with st.container(key=f"glossary_{glossary.entry_id(entry)}", border=True):
            also = [key for key in entry["keys"] if key != entry["name"]]
            st.markdown(f"**{md_escape(entry['name'])}**"
                        + (f" · {md_escape(', '.join(also))}" if also else ""))
            st.markdown(md_escape(entry["sentence"]))
            if entry["formula"]:
                st.caption("Formula: " + md_escape(entry["formula"]))
            if entry["source"]:
                st.caption("From: " + md_escape(entry["source"]))
