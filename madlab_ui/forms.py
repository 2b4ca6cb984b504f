"""The debate form: widgets keyed by the UI contract, presets, validation errors, Start.

The form's state lives in `st.session_state` under the widget keys (never passed as `value=`),
so presets and forks fill it by writing those keys before the widgets are drawn. Validation is
the engine's (`DebateConfig.from_dict`); a `ConfigError` is shown right under the field it
names, inside a container keyed `error_<widget key>`, and nothing starts.
What it must not do: run a debate in the script (Start hands the config to `mad_core.live`).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import streamlit as st

from mad_core import live, prompts, registry
from mad_core.config import CONNECTIVITY_NAMES, AgentConfig, ConfigError, DebateConfig
from mad_core.models import DEFAULT_MODEL, call_model, ensure_registered, known_models
from mad_core.personas import generate_personas as generate_personas_for
from mad_core.presets import load_presets

from .common import DEBATE_ID, FORK_REQUEST, id8, open_store, owner_id

MAX_AGENTS = 12  # seed 003 runs 10 agents
FORM_ERROR = "form_error"  # session key: (widget key, message) of the last ConfigError
PERSONA_ERROR = "persona_error"
FORM_EXTRA = "form_extra"  # config fields a preset or fork set that the form does not show

_DEFAULTS = DebateConfig(question="x")
_AGENT = AgentConfig(label="x")
# Widget key -> config field, for the debate-level settings (agents are handled apart).
FIELD_KEYS = {
    "question": "question", "task": "task", "reference": "reference", "paradigm": "paradigm",
    "response_generator": "response_generator", "tit_for_tat": "tit_for_tat", "protocol": "protocol",
    "consensus_threshold": "consensus_threshold", "cumulative_points": "cumulative_points", "rounds": "rounds",
    "max_rounds": "max_rounds", "judge_model": "judge_model", "ordering": "ordering", "aad": "all_agents_drafting",
    "memory_window": "memory_window", "confidence": "confidence", "confidence_visible": "confidence_visible",
    "challenge": "challenge", "seed": "seed", "extract_final_answers": "extract_final_answers",
    "judge_adaptive_break": "judge_adaptive_break", "debate_subrounds": "debate_subrounds",
    "vote_retries": "vote_retries", "auto_personas": "auto_personas", "summarizer_model": "summarizer_model",
    "connectivity": "connectivity", "answer_type": "answer_type", "answer_options": "answer_options",
    "kks_depth": "kks_depth", "kks_order": "kks_order", "supervisor_model": "supervisor_model",
}
AGENT_KEYS = {"label": "agent_label_{i}", "model": "agent_model_{i}", "persona": "agent_persona_{i}",
              "temperature": "agent_temp_{i}"}
# answer_type -> its label in the form (the kinds of mad_core.tasks.answer_types.KINDS)
ANSWER_KINDS = {"text": "free text", "choice": "multiple choice (letter)", "number": "number", "yes_no": "yes / no",
                "kks": "Knight-Knave-Spy assignment"}
KKS_PARADIGM = "kks_per_player"  # seed 001's per-player Knight-Knave-Spy debate (mad_core/kks_mode.py)
KKS_DEFAULT_PLAYERS = 5
TFT_NONE = -1  # the tit-for-tat selectbox's "None" (a None option would read as "nothing chosen")
CUSTOM_GRAPH = "custom"  # the connectivity selectbox's value for a mapping set by a preset or fork


def _agent_defaults(i: int) -> dict[str, Any]:
    return {"label": f"Agent {i + 1}", "model": DEFAULT_MODEL, "persona": "", "temperature": _AGENT.temperature}


def form_defaults() -> dict[str, Any]:
    """Every form key with its starting value (the engine's defaults; question empty)."""
    state: dict[str, Any] = {key: getattr(_DEFAULTS, name) for key, name in FIELD_KEYS.items()}
    state.update(question="", reference="", judge_model="", summarizer_model="", tit_for_tat=TFT_NONE, preset="",
                 answer_options="", n_agents=3, max_tokens=_AGENT.max_tokens, supervisor_model="",
                 kks_players=KKS_DEFAULT_PLAYERS, kks_seed=0)
    for i in range(MAX_AGENTS):
        for name, pattern in AGENT_KEYS.items():
            state[pattern.format(i=i)] = _agent_defaults(i)[name]
    return state


def keep_form_state() -> None:
    """Keep the form's values while another page is shown (Streamlit drops unrendered widgets' state)."""
    for key, value in form_defaults().items():
        st.session_state[key] = st.session_state.get(key, value)


# ----- config <-> form ------------------------------------------------------------------------
def config_to_state(config: dict[str, Any]) -> dict[str, Any]:
    """Form values for a config dict (unknown-to-the-form fields are returned under FORM_EXTRA)."""
    state = form_defaults()
    shown = set(FIELD_KEYS.values()) | {"agents"}
    for key, name in FIELD_KEYS.items():
        if name in config:
            state[key] = config[name]
    state["reference"] = config.get("reference") or ""
    state["answer_options"] = options_text(config.get("answer_options"))
    state["judge_model"] = config.get("judge_model") or ""
    state["summarizer_model"] = config.get("summarizer_model") or ""
    state["supervisor_model"] = config.get("supervisor_model") or ""
    graph = config.get("connectivity", "full")
    state["connectivity"] = graph if isinstance(graph, str) else CUSTOM_GRAPH
    state["tit_for_tat"] = TFT_NONE if config.get("tit_for_tat") is None else config["tit_for_tat"]
    agents = config.get("agents") or [dataclasses.asdict(a) for a in _DEFAULTS.agents]
    agents = [a if isinstance(a, dict) else dataclasses.asdict(a) for a in agents][:MAX_AGENTS]
    state["n_agents"] = max(1, len(agents))
    for i, agent in enumerate(agents):
        for name, pattern in AGENT_KEYS.items():
            state[pattern.format(i=i)] = agent.get(name, _agent_defaults(i)[name])
    if agents:
        state["max_tokens"] = agents[0].get("max_tokens", _AGENT.max_tokens)
    state[FORM_EXTRA] = {k: v for k, v in config.items() if k not in shown}
    if state["connectivity"] == CUSTOM_GRAPH:  # a who-sees-whom mapping: kept as set, shown as text
        state[FORM_EXTRA]["connectivity"] = graph
    return state


def apply_config(config: dict[str, Any], preset: str = "") -> None:
    """Fill the form from a config dict (call before the form's widgets are drawn)."""
    for key, value in config_to_state(config).items():
        st.session_state[key] = value
    st.session_state["preset"] = preset
    st.session_state.pop(FORM_ERROR, None)


def form_config(state=None) -> dict[str, Any]:
    """The config dict the form describes (not yet validated)."""
    state = state if state is not None else st.session_state
    n = int(state["n_agents"])
    agents = [{
        "label": str(state[AGENT_KEYS["label"].format(i=i)] or "").strip(),
        "model": str(state[AGENT_KEYS["model"].format(i=i)] or "").strip(),
        "persona": str(state[AGENT_KEYS["persona"].format(i=i)] or ""),
        "temperature": float(state[AGENT_KEYS["temperature"].format(i=i)]),
        "max_tokens": int(state["max_tokens"]),
    } for i in range(n)]
    data = dict(state.get(FORM_EXTRA) or {})
    data.update({name: state[key] for key, name in FIELD_KEYS.items()})
    data["agents"] = agents
    data["reference"] = (state["reference"] or "").strip() or None
    data["answer_options"] = options_list(state["answer_options"])
    data["judge_model"] = (state["judge_model"] or "").strip() or None
    data["summarizer_model"] = (state["summarizer_model"] or "").strip() or None
    data["supervisor_model"] = (state["supervisor_model"] or "").strip() or None
    if state["connectivity"] == CUSTOM_GRAPH:
        data["connectivity"] = (state.get(FORM_EXTRA) or {}).get("connectivity", "full")
    data["tit_for_tat"] = None if state["tit_for_tat"] == TFT_NONE else state["tit_for_tat"]
    return data


def options_text(options: Any) -> str:
    """answer_options as the form shows them: one per line ("" for None)."""
    return "\n".join(str(o) for o in options) if isinstance(options, list) else ""


def options_list(text: Any) -> list[str] | None:
    """The form's answer-options text as a list (blank lines dropped; None when empty)."""
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    return lines or None


def widget_for(field: str) -> str:
    """The widget key under which a ConfigError about `field` is shown ("form" if none)."""
    match = re.fullmatch(r"agents\[(\d+)\](?:\.(\w+))?", field)
    if match:
        index, name = int(match.group(1)), match.group(2)
        if name == "max_tokens":
            return "max_tokens"
        return AGENT_KEYS[name].format(i=index) if name in AGENT_KEYS else "n_agents"
    if field == "agents":
        return "n_agents"
    reverse = {name: key for key, name in FIELD_KEYS.items()}
    return reverse.get(re.split(r"[.\[]", field)[0], "form")  # "connectivity.Agent 2" -> the connectivity widget


def error_slot(key: str) -> None:
    """Show the pending ConfigError if it belongs to the widget `key`."""
    error = st.session_state.get(FORM_ERROR)
    if error and error[0] == key:
        with st.container(key=f"error_{key}"):
            st.error(error[1])


# ----- presets --------------------------------------------------------------------------------
def _on_preset() -> None:
    choice = st.session_state.get("preset")
    presets = load_presets()
    if choice in presets:
        apply_config(presets[choice]["config"], preset=choice)


# ----- actions --------------------------------------------------------------------------------
def start_debate() -> None:
    """Start button: validate, then start (or fork) the debate in the background."""
    st.session_state.pop(FORM_ERROR, None)
    try:
        config = DebateConfig.from_dict(form_config())
        fork = st.session_state.get(FORK_REQUEST)
        if fork:
            debate = live.start_fork(fork["parent_id"], fork["seq"], open_store(), config, owner=owner_id())
        else:
            debate = live.start(config, store=open_store().path, owner=owner_id())
    except ConfigError as exc:
        st.session_state[FORM_ERROR] = (widget_for(exc.field), f"{exc.field}: {exc.message}")
        return
    except Exception as exc:  # noqa: BLE001 - e.g. a fork of a debate that was deleted meanwhile
        st.session_state[FORM_ERROR] = ("form", f"Could not start: {exc}")
        return
    st.session_state[DEBATE_ID] = debate.debate_id
    st.session_state.pop(FORK_REQUEST, None)
    from .plots import warm_up

    warm_up()


def generate_kks_puzzle() -> None:
    """Fill the form with a generated Knight-Knave-Spy puzzle (seed 001 §3) for the per-player debate:
    the puzzle as the question, its solution as the reference, the players as the answer options."""
    from mad_core.kks_mode import assignment_text
    from mad_core.tasks import kks

    n, seed = int(st.session_state["kks_players"]), int(st.session_state["kks_seed"])
    try:
        puzzle = kks.generate(n, seed)
    except ValueError as exc:
        st.session_state[FORM_ERROR] = ("kks_players", str(exc))
        return
    st.session_state.update(question=puzzle.text, reference=assignment_text(puzzle.solution, puzzle.names),
                            answer_type="kks", answer_options=options_text(puzzle.names), paradigm=KKS_PARADIGM,
                            protocol="kks_player_vote", aad=False, rounds=n + 2, max_rounds=n + 2)
    st.session_state.pop(FORM_ERROR, None)


def generate_personas() -> None:
    """Ask the first agent's model for one expert persona per agent (the engine's persona generation)."""
    st.session_state.pop(PERSONA_ERROR, None)
    question, task = st.session_state["question"].strip(), st.session_state["task"]
    if not question:
        st.session_state[PERSONA_ERROR] = "Write the question first: personas are chosen for it."
        return
    model = st.session_state[AGENT_KEYS["model"].format(i=0)]
    errors: list[str] = []

    def ask(label: str, messages: list[dict]) -> str | None:
        result = call_model(model, messages, max_tokens=60, temperature=0.7)
        if result.status != "ok":
            errors.append(result.error or "empty reply")
            return None
        return result.text

    n = int(st.session_state["n_agents"])
    found = generate_personas_for(question, task, [str(i) for i in range(n)], ask)
    if errors and len(errors) >= n:
        st.session_state[PERSONA_ERROR] = f"{model} gave no persona: {errors[-1]}"
        return
    for i in range(n):
        st.session_state[AGENT_KEYS["persona"].format(i=i)] = found[str(i)]


# ----- rendering ------------------------------------------------------------------------------
def _doc(kind: str, name: str | None) -> str:
    if not name:
        return ""
    try:
        doc = registry.get(kind, name).__doc__ or ""
    except Exception:  # noqa: BLE001
        return ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _choice(label: str, kind: str, key: str) -> None:
    st.selectbox(label, registry.names(kind), key=key)
    st.caption(_doc(kind, st.session_state.get(key)))
    error_slot(key)


def _model_options(current: str | None) -> list[str]:
    ensure_registered()  # scripted models of a MADLAB_SCRIPTS file are listed too
    names = [m["name"] for m in known_models() if "<" not in m["name"]]
    return list(dict.fromkeys(names + ([current] if current else [])))


def _tit_for_tat_label(level: int) -> str:
    return "None - no debate meta prompt" if level == TFT_NONE else prompts.TIT_FOR_TAT_SUMMARY[level]


def render_fork_banner() -> None:
    fork = st.session_state.get(FORK_REQUEST)
    if not fork:
        return
    if not fork.get("applied"):
        apply_config(fork["config"])
        fork["applied"] = True
    with st.container(key="fork_banner", border=True):
        st.info(f"Forking from debate {id8(fork['parent_id'])} at turn {fork['turn_index']} "
                f"(seq {fork['seq']}): the turns up to it are kept, the rest is run again with this form's settings.")
        if st.button("Cancel fork", key="cancel_fork"):
            st.session_state.pop(FORK_REQUEST, None)
            st.rerun()


def render_form(height: int = 860) -> None:
    """The whole debate form (in a scroll box, so Start stays in sight) with its Start button."""
    with st.container(height=height, key="setup_form"):
        _render_fields()
    error_slot("form")
    label = "Start fork" if st.session_state.get(FORK_REQUEST) else "Start debate"
    st.button(label, key="start", type="primary", on_click=start_debate, width="stretch")


def _render_fields() -> None:
    presets = load_presets()
    st.selectbox("Preset", [""] + list(presets), key="preset", on_change=_on_preset,
                 format_func=lambda p: presets[p]["title"] if p in presets else "(none: fill in yourself)")
    if st.session_state.get("preset") in presets:
        st.caption(f"Source: {presets[st.session_state['preset']]['source']}")
    # height="content": a fixed-height text_area collapses to 0 px inside a scrolling container (Streamlit 1.67).
    st.text_area("Question", key="question", height="content", placeholder="What should the agents answer?")
    error_slot("question")
    st.text_input("Task instruction (optional)", key="task", placeholder="e.g. Answer with the letter only.")
    error_slot("task")
    st.text_input("Reference answer (optional, hidden while the debate runs)", key="reference", type="password")
    error_slot("reference")
    st.selectbox("Answer type (how answers and the reference are read for the metrics)", list(ANSWER_KINDS),
                 key="answer_type", format_func=lambda k: ANSWER_KINDS[k])
    error_slot("answer_type")
    st.text_area("Answer options, one per line (choice: the option texts in letter order; "
                 "Knight-Knave-Spy: the player names)", key="answer_options", height="content")
    error_slot("answer_options")
    left, middle, right = st.columns([2, 2, 3], vertical_alignment="bottom")
    left.number_input("Players", min_value=3, max_value=9, step=1, key="kks_players")
    middle.number_input("Puzzle seed", min_value=0, step=1, key="kks_seed")
    right.button("Generate a Knight-Knave-Spy puzzle", key="generate_kks", on_click=generate_kks_puzzle,
                 help="Fills the question, the reference (its unique solution), the answer type and the "
                      "player names, and selects seed 001's per-player debate.")
    error_slot("kks_players")

    st.subheader("Agents")
    st.number_input("Number of agents", min_value=1, max_value=MAX_AGENTS, step=1, key="n_agents")
    error_slot("n_agents")
    st.button("Suggest expert personas", key="generate_personas", on_click=generate_personas,
              help="Asks the first agent's model for one expert persona per agent, for this question.")
    if st.session_state.get(PERSONA_ERROR):
        st.warning(st.session_state[PERSONA_ERROR])
    for i in range(int(st.session_state["n_agents"])):
        _render_agent(i)
    st.number_input("Max tokens per reply (all agents)", min_value=1, step=16, key="max_tokens")
    error_slot("max_tokens")

    st.subheader("Discussion")
    _choice("Paradigm", "paradigm", "paradigm")
    _choice("Response generator", "response_generator", "response_generator")
    st.selectbox("Tit for tat", [TFT_NONE, 0, 1, 2, 3], key="tit_for_tat", format_func=_tit_for_tat_label)
    level = st.session_state.get("tit_for_tat")
    st.caption("No instruction about disagreeing (two-sided debates use level 2)." if level == TFT_NONE
               else f"Every agent is told: {prompts.TIT_FOR_TAT[level]}")
    error_slot("tit_for_tat")
    _choice("Speaking order", "ordering", "ordering")
    if st.session_state.get("paradigm") == KKS_PARADIGM:
        _render_kks_fields()
    _render_connectivity()
    st.selectbox("Summarizer model (simultaneous_summarizer)", [""] + _model_options(
        st.session_state.get("summarizer_model")), key="summarizer_model", accept_new_options=True,
        format_func=lambda m: m or "(same as the first agent)")
    error_slot("summarizer_model")
    left, right = st.columns(2)
    with left:
        st.number_input("Rounds", min_value=1, step=1, key="rounds")
        error_slot("rounds")
        st.number_input("Memory window (rounds, empty = all)", min_value=0, step=1, key="memory_window")
        error_slot("memory_window")
    with right:
        st.number_input("Max rounds", min_value=1, step=1, key="max_rounds")
        error_slot("max_rounds")
        st.number_input("Seed (empty = random)", step=1, key="seed")
        error_slot("seed")
    st.checkbox("All agents draft first (AAD)", key="aad")
    error_slot("aad")
    st.checkbox("Agents state their confidence", key="confidence")
    st.checkbox("Confidence visible to the others", key="confidence_visible")
    st.checkbox("Agents may challenge the final answer", key="challenge")

    st.subheader("Decision")
    _choice("Protocol", "protocol", "protocol")
    left, right = st.columns(2)
    with left:
        st.number_input("Consensus threshold (empty = protocol's)", min_value=0.0, max_value=1.0, step=0.05,
                        key="consensus_threshold")
        error_slot("consensus_threshold")
    with right:
        st.number_input("Cumulative voting points", min_value=1, step=1, key="cumulative_points")
        error_slot("cumulative_points")
    st.selectbox("Judge model", [""] + _model_options(st.session_state.get("judge_model")), key="judge_model",
                 accept_new_options=True, format_func=lambda m: m or "(same as the first agent)")
    error_slot("judge_model")
    with st.expander("Advanced"):
        st.checkbox("Extract final answers before voting", key="extract_final_answers")
        st.checkbox("Judge may end the debate early", key="judge_adaptive_break")
        st.checkbox("Generate personas automatically at start", key="auto_personas")
        st.number_input("Exchanges per round (debate paradigm)", min_value=1, step=1, key="debate_subrounds")
        error_slot("debate_subrounds")
        st.number_input("Re-asks for an unreadable ballot", min_value=0, step=1, key="vote_retries")
        error_slot("vote_retries")


def _render_kks_fields() -> None:
    """Seed 001's factors of the per-player debate (Table 1): debate depth and order, the supervisor."""
    with st.container(border=True, key="kks_fields"):
        st.caption("Knight-Knave-Spy player by player (seed 001 §4.1): proposals, then for each player a "
                   "debate and a self-adjustment, then final assignments and a per-player vote. It runs "
                   "players + 2 rounds, whatever the round fields say.")
        left, right = st.columns(2)
        left.number_input("Debate passes per player (depth)", min_value=1, max_value=3, step=1, key="kks_depth")
        right.selectbox("Order of the players", ["fixed", "agreed"], key="kks_order",
                        format_func=lambda o: {"fixed": "fixed (the puzzle's order)",
                                               "agreed": "agreed by the agents"}[o])
        error_slot("kks_depth")
        error_slot("kks_order")
        st.selectbox("Supervisor model (breaks ties of the vote)",
                     [""] + _model_options(st.session_state.get("supervisor_model")), key="supervisor_model",
                     accept_new_options=True, format_func=lambda m: m or "(same as the first agent)")
        error_slot("supervisor_model")


def _render_connectivity() -> None:
    """Who sees whom (seed 003): full, ring, or the mapping a preset or fork set (shown, kept as is)."""
    custom = (st.session_state.get(FORM_EXTRA) or {}).get("connectivity")
    options = list(CONNECTIVITY_NAMES) + ([CUSTOM_GRAPH] if isinstance(custom, dict) else [])
    if st.session_state.get("connectivity") not in options:
        st.session_state["connectivity"] = "full"
    st.selectbox("Who sees whom", options, key="connectivity",
                 help="full: every agent sees every other; ring: each agent sees its two neighbours "
                      "in the configured agent order (seed 003's sparse connectivity).")
    if st.session_state["connectivity"] == CUSTOM_GRAPH:
        st.text("; ".join(f"{viewer} sees {', '.join(seen) or 'nobody'}" for viewer, seen in custom.items()))
    error_slot("connectivity")


def _render_agent(i: int) -> None:
    keys = {name: pattern.format(i=i) for name, pattern in AGENT_KEYS.items()}
    with st.container(border=True):
        left, right = st.columns([2, 3])
        with left:
            st.text_input(f"Label {i + 1}", key=keys["label"])
        with right:
            st.selectbox(f"Model {i + 1}", _model_options(st.session_state.get(keys["model"])), key=keys["model"],
                         accept_new_options=True, help="Any litellm model name (provider/model) can be typed.")
        error_slot(keys["label"])
        error_slot(keys["model"])
        st.text_input(f"Persona {i + 1}", key=keys["persona"], placeholder="optional: who this agent is")
        error_slot(keys["persona"])
        st.slider(f"Temperature {i + 1}", 0.0, 2.0, step=0.05, key=keys["temperature"])
        error_slot(keys["temperature"])
