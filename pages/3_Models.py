"""Models: the models MAD Lab knows, whether their API key is set (never the key itself), a
short test call per model (max 16 tokens) showing the answer and the latency, and the providers
a model name may start with (an unknown provider's error points here instead of listing them);
better local models to download in one click and an Ollama server's models
(``madlab_ui.model_downloads``)."""
from __future__ import annotations

import streamlit as st

from mad_core.models import DEFAULT_MODEL, call_model, known_models, provider_names, validate_model_name
from madlab_ui.common import md_escape
from madlab_ui.model_downloads import render_curated, render_ollama
from madlab_ui.page import page_setup

TESTS = "model_tests"  # session key: {model name: (status, text, seconds)}
TEST_PROMPT = [{"role": "user", "content": "Say hello in five words."}]

page_setup("Models")
st.title("Models")
st.markdown(f"The offline default is **{DEFAULT_MODEL}** (SmolLM2-135M on the CPU). Any litellm model name "
            "(`provider/model`) can be typed in an agent's model box on the Debate page; remote providers read "
            "their API key from the environment.")
providers = provider_names()
with st.expander(f"Providers MAD Lab can reach ({len(providers)})", key="providers"):
    st.caption("A model name is `provider/model`: the provider is one of these (litellm's, and MAD Lab's own "
               "local, hf, scripted and callable). An unknown provider in a model box is refused before anything runs.")
    st.text(", ".join(providers))
render_curated()
render_ollama()
st.subheader("All models")
results = st.session_state.setdefault(TESTS, {})
models = known_models()
with st.container(key="model_table"):
    header = st.columns([3, 1, 3, 2, 1])
    for column, title in zip(header, ["model", "kind", "description", "API key", ""]):
        if title:
            column.markdown(f"**{title}**")
    for i, model in enumerate(models):
        name = model["name"]
        with st.container(key=f"model_{i}", border=True):
            cols = st.columns([3, 1, 3, 2, 1], vertical_alignment="center")
            cols[0].markdown(f"`{name}`")
            cols[1].markdown(model["kind"])
            cols[2].caption(md_escape(model["description"]))
            if model["key_env"] is None:
                cols[3].markdown("no key needed")
            else:
                cols[3].markdown(("✅ " if model["key_present"] else "❌ ") + f"`{model['key_env']}`")
            if cols[4].button("Test", key=f"test_{i}", width="stretch",
                              help="A short call (at most 16 tokens) through litellm."):
                problem = validate_model_name(name)
                if problem:
                    results[name] = ("failed", problem, 0.0)
                else:
                    with st.spinner(f"Calling {name}…"):
                        result = call_model(name, TEST_PROMPT, max_tokens=16, temperature=0.0)
                    results[name] = (result.status, result.text if result.status == "ok" else result.error or "",
                                     result.latency_s)
            if name in results:
                status, text, seconds = results[name]
                with st.container(key=f"test_result_{i}"):
                    (st.success if status == "ok" else st.error)(f"{status} in {seconds:.2f} s")
                    st.text(text)
