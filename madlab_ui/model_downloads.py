"""The Models page's sections for better local models: the curated GGUFs (name, size, licence, the speed
measured on this machine, a Download button, and a progress bar while the download runs) and the
models of an Ollama server on this machine.

A download runs in a background thread (``mad_core.models.installer``); a fragment polls its progress
every ``POLL_S`` seconds while one runs, and reruns the page when it ends so the table shows the
result. Whether the Hub and Ollama answer is asked with short timeouts and the answers are kept
briefly (``downloads.network_problem``, ``ollama.server_models``).

What it must not do: download anything nobody clicked for, run a download in the script run, wait
on the network on every rerun, or render a name or message that came from a server as markup.
"""
from __future__ import annotations

import streamlit as st

from mad_core.models import downloads, installer, ollama
from madlab_ui.common import md_escape

POLL_S = 1.0
_PHASE = {"starting": "Starting the download of", "downloading": "Downloading",
          "verifying": "Checking the sha256 of", "measuring": "Measuring the speed on this machine of"}


def _size(size: int | None) -> str:
    if not size:
        return "?"
    if size < 1e7:
        return f"{size / 1e6:.1f} MB"
    return f"{size / 1e6:,.0f} MB" if size < 1e9 else f"{size / 1e9:.2f} GB"


def speed_text(alias: str) -> str:
    """The speed measured here after the download, or why there is none."""
    speed = (downloads.read_record(alias) or {}).get("speed") or {}
    if isinstance(speed.get("tokens_per_s"), (int, float)):
        return f"{speed['tokens_per_s']:g} tokens/s on this machine"
    return speed.get("note") or "speed not measured yet"


def _row(i: int, entry: downloads.CuratedModel, have: dict[str, str], problem: str | None) -> None:
    job = installer.job(entry.alias)
    with st.container(key=f"curated_{i}", border=True):
        cols = st.columns([3, 1, 2, 2, 1], vertical_alignment="center")
        cols[0].markdown(f"**{md_escape(entry.name)}**")
        cols[0].caption(md_escape(entry.description))
        cols[1].markdown(_size(entry.size))
        cols[2].markdown(md_escape(entry.licence))
        if entry.alias in have:
            cols[3].markdown(f"`{entry.model_name}`")  # an alias is [a-z0-9._-] (downloads._ALIAS)
            cols[3].caption(md_escape(speed_text(entry.alias)))
        else:
            cols[3].caption("not downloaded")
        busy = job is not None and job.running
        if cols[4].button("Download", key=f"download_{i}", width="stretch",
                          disabled=entry.alias in have or busy or bool(problem),
                          help=f"{entry.repo} at commit {entry.revision[:12]}, checked against its sha256"):
            installer.start(entry.alias)
            st.rerun()
        if job is not None and not job.running and job.message:
            with st.container(key=f"download_result_{i}"):
                (st.success if job.state == "done" else st.error)(md_escape(job.message))


@st.fragment(run_every=POLL_S)
def _progress() -> None:
    """Every running download's bar; when none runs any more, the whole page again (its table)."""
    running = [job for job in installer.jobs() if job.running]
    if not running:
        st.rerun()
    for job in running:
        done = f": {_size(job.done_bytes)} of {_size(job.total_bytes)}" if job.state == "downloading" else "…"
        with st.container(key=f"download_progress_{job.alias}"):
            st.progress(job.fraction(), text=md_escape(f"{_PHASE[job.state]} {job.name}{done}"))


def render_curated() -> None:
    """The curated list with its Download buttons, and the progress of running downloads."""
    st.subheader("Better local models")
    st.caption("Small instruct models in GGUF, each pinned to one commit of its Hugging Face repository and "
               "checked against its sha256 after the download. Once downloaded, a model is `local/NAME` in any "
               "agent's model box, like the offline default; its speed is measured here right after.")
    try:
        entries = downloads.curated()
    except ValueError as error:
        st.error(str(error))
        return
    have = downloads.installed()
    problem = None if all(entry.alias in have for entry in entries) else downloads.network_problem()
    if problem:
        with st.container(key="download_network"):
            st.warning(problem)
    with st.container(key="curated_models"):
        for i, entry in enumerate(entries):
            _row(i, entry, have, problem)
    if any(job.running for job in installer.jobs()):
        _progress()


def render_ollama() -> None:
    """What the Ollama server at OLLAMA_API_BASE has (its models are in the table below), or why none."""
    listing = ollama.server_models()
    st.subheader("Ollama")
    with st.container(key="ollama_section"):
        if listing.problem:
            st.info(listing.problem)
        elif not listing.models:
            st.info(f"The Ollama server at {listing.base} has no models yet: pull one with `ollama pull llama3.2:1b`.")
        else:
            st.caption(f"{len(listing.models)} model(s) on the Ollama server at {listing.base}, each usable as "
                       "`ollama/NAME` through litellm (they are in the table below, with a Test button).")
            st.dataframe([{"model": m.model_name, "size": _size(m.size), "parameters": m.parameters or "",
                           "quantization": m.quantization or ""} for m in listing.models],
                         hide_index=True, key="ollama_models")
