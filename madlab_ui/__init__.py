"""Streamlit helpers of MAD Lab's web app (the pages in `app.py` and `pages/` stay thin).

Modules: `common` (page setup, store, colors, escaping), `forms` (the debate form, presets,
validation errors under their fields, starting a debate), `transcript` (status, chat bubbles,
votes, decision card, usage), `controls` (steering buttons), `plots` (plotly charts of the
metrics). Everything here only renders what `mad_core` computes; no debate runs in a script run.
"""
