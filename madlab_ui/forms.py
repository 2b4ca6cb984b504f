"""The debate form: widgets keyed by the UI contract, presets, validation errors, Start.

The form's state lives in `st.session_state` under the widget keys (never passed as `value=`; every
field with `persist_state="session"`, and `keep_form_state` on every page, so another page and back keeps it),
so presets and forks fill it by writing those keys before the widgets are drawn, and every widget
is bound to its key: what the user sees is what Start validates. Validation is the engine's
(`DebateConfig.problems`, the rules of `DebateConfig.validate`): at Start every problem is found,
each shown right under the field it names (a container keyed `error_<widget key>`) and, in one
line right above Start (keyed `form_errors`), the labels of those fields in the form's order (a short
line: the form's box keeps its height at 1280x720). A rule over a field that is wrong itself (max_rounds
>= rounds while rounds is out of range) is not reported: only the first cause is. Nothing starts
while there is one, and they are checked again on every run until fixed. Number fields take what
is typed (no widget bounds that would silently keep the old value): validation refuses it by name.
Start is disabled while this session's debate runs. "Suggest expert personas" asks the first
agent's model for a checked list (`mad_core.personas`) and leaves the fields as they were, saying
why, when the model cannot give one.

Presets: a preset fills the settings; a question the user wrote is kept (with the task fields they
gave it) unless they ask for the preset's example. The preset's task fields (task instruction,
reference answer, answer type and options) belong to its example question only: as soon as the
question in the form is another one (typed over it, or kept when the preset was chosen), those of
them still as the preset set them are cleared and a caption says so, so that a hidden reference
never grades a question it was not written for; "Use the preset's example question" brings them
back. Once any setting differs from the preset's, the picker and its caption name what was changed.

The reference answer is a plain text input masked by CSS (`-webkit-text-security`) rather than
`type="password"`: Streamlit 1.67's password input skips committing its value on blur when
focus moves to its show/hide button (which Tab does), so a reference left with Tab was lost.

Keys besides the fields' own: `form_errors` (the summary), `error_<key>`, `start_wait` (why Start
is disabled), `persona_error`, `<kind>_doc` (a picker's description), `show_reference`,
`use_preset_question`, `advanced` (the expander), `preset_note` (what the form changed from the preset,
what of it was cleared).

What it must not do: run a debate in the script (Start hands the config to `mad_core.live`),
or render user or model text as HTML.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import streamlit as st

from mad_core import live, prompts, registry
from mad_core.config import AT_TIME_LIMIT, CONNECTIVITY_NAMES, PERSON, AgentConfig, ConfigError, DebateConfig
from mad_core.model_keys import key_problems
from mad_core.models import (DEFAULT_MODEL, call_model, ensure_registered, known_models, response_format_support,
                             validate_model_name)
from mad_core.protocols.schemas import ReplyFormat
from mad_core.personas import generate_personas as generate_personas_for
from mad_core.presets import load_presets
from mad_core.tasks.answer_types import reads_as_number

from .common import DEBATE_ID, FORK_REQUEST, id8, md_escape, model_markdown, open_store, owner_id
from .session_memory import KEPT, remember_keys

MAX_AGENTS = 12  # seed 003 runs 10 agents
# Every field keeps its value while another page is shown (Streamlit 1.67's `persist_state`): see keep_form_state.
PERSIST = "session"
FORM_ERROR = "form_error"  # session key: [(widget key, field label, message)] of the problems shown
FORM_LIVE = "form_live"  # session key: the problems shown came from validation: check them again each run
PERSONA_ERROR = "persona_error"
FORM_EXTRA = "form_extra"  # config fields a preset or fork set that the form does not show
PRESET_QUESTION = "preset_question"  # the question the last applied preset wrote (a different one is the user's)
PRESET_TASK = "preset_task"  # {task field: [value the preset set, times cleared]} while it may still be cleared
PRESET_CLEARED = "preset_cleared"  # the task fields of the preset cleared because the question is the user's
PRESET_NO_SETTLE = "preset_no_settle"  # this run's preset callback cleared fields: the browser has not seen it yet
TASK_FIELDS = ("question", "task", "reference", "answer_type", "answer_options")  # a question and its reading

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
              "temperature": "agent_temp_{i}", "time_limit_s": "agent_seatlimit_{i}",
              "at_time_limit": "agent_atlimit_{i}", "stand_in_model": "agent_standin_{i}"}
SEAT_KEYS = ("time_limit_s", "at_time_limit", "stand_in_model")  # a person's seat (shown when the model is PERSON)
AT_LIMIT_WORDS = {"skip": "skip the turn (the transcript says so)", "model": "a model speaks in the seat's place"}
# answer_type -> its label in the form (the kinds of mad_core.tasks.answer_types.KINDS)
ANSWER_KINDS = {"text": "free text", "choice": "multiple choice (letter)", "number": "number", "yes_no": "yes / no",
                "kks": "Knight-Knave-Spy assignment"}
KKS_PARADIGM = "kks_per_player"  # seed 001's per-player Knight-Knave-Spy debate (mad_core/kks_mode.py)
KKS_DEFAULT_PLAYERS = 5
TFT_NONE = -1  # the tit-for-tat selectbox's "None" (a None option would read as "nothing chosen")
CUSTOM_GRAPH = "custom"  # the connectivity selectbox's value for a mapping set by a preset or fork

# The widgets that can carry an error, top to bottom as the form draws them (an agent's fields follow n_agents).
FORM_ORDER = ["preset", "question", "task", "reference", "answer_type", "answer_options", "kks_players", "n_agents",
              "max_tokens", "paradigm", "response_generator", "tit_for_tat", "ordering", "kks_depth", "kks_order",
              "supervisor_model", "connectivity", "summarizer_model", "rounds", "max_rounds", "memory_window", "seed",
              "aad", "protocol", "consensus_threshold", "cumulative_points", "judge_model", "extract_final_answers",
              "judge_adaptive_break", "auto_personas", "debate_subrounds", "vote_retries", "form"]

# Widget key -> its label (the error summary names a field by its label, up to any "(...)").
LABELS = {
    "question": "Question", "task": "Task instruction (optional)",
    "reference": "Reference answer (optional, hidden while the debate runs)",
    "answer_type": "Answer type (how answers and the reference are read for the metrics)",
    "answer_options": "Answer options, one per line (choice: the option texts in letter order; "
                      "Knight-Knave-Spy: the player names)",
    "kks_players": "Players", "kks_seed": "Puzzle seed", "n_agents": "Number of agents",
    "max_tokens": "Max tokens per reply (all agents)", "paradigm": "Paradigm", "response_generator": "Response generator",
    "tit_for_tat": "Tit for tat", "ordering": "Speaking order", "connectivity": "Who sees whom",
    "summarizer_model": "Summarizer model (simultaneous_summarizer)", "rounds": "Rounds",
    "memory_window": "Memory window (rounds, empty = all)", "max_rounds": "Max rounds", "seed": "Seed (empty = random)",
    "aad": "All agents draft first (AAD)", "confidence": "Agents state their confidence",
    "confidence_visible": "Confidence visible to the others", "challenge": "Agents may challenge the final answer",
    "protocol": "Protocol", "consensus_threshold": "Consensus threshold (empty = protocol's)",
    "cumulative_points": "Cumulative voting points", "judge_model": "Judge model",
    "extract_final_answers": "Extract final answers before voting", "judge_adaptive_break": "Judge may end the debate early",
    "auto_personas": "Generate personas automatically at start", "debate_subrounds": "Exchanges per round (debate paradigm)",
    "vote_retries": "Re-asks for an unreadable ballot", "kks_depth": "Debate passes per player (depth)",
    "kks_order": "Order of the players", "supervisor_model": "Supervisor model (breaks ties of the vote)",
}
AGENT_LABELS = {"label": "Label {n}", "model": "Model {n}", "persona": "Persona {n}", "temperature": "Temperature {n}",
                "time_limit_s": "Time limit {n} (seconds)", "at_time_limit": "At the time limit {n}",
                "stand_in_model": "Stand-in model {n}"}
_AGENT_KEY_NAMES = {"temp": "temperature", "seatlimit": "time_limit_s", "atlimit": "at_time_limit",
                    "standin": "stand_in_model"}
# The reference's mask (our own static CSS, no user text): typed characters show as discs.
MASK_REFERENCE = "<style>.st-key-reference input { -webkit-text-security: disc; }</style>"


def _agent_defaults(i: int) -> dict[str, Any]:
    return {"label": f"Agent {i + 1}", "model": DEFAULT_MODEL, "persona": "", "temperature": _AGENT.temperature,
            "time_limit_s": _AGENT.time_limit_s, "at_time_limit": _AGENT.at_time_limit, "stand_in_model": ""}


def form_defaults() -> dict[str, Any]:
    """Every form key with its starting value (the engine's defaults; question empty)."""
    state: dict[str, Any] = {key: getattr(_DEFAULTS, name) for key, name in FIELD_KEYS.items()}
    state.update(question="", reference="", judge_model="", summarizer_model="", tit_for_tat=TFT_NONE, preset="",
                 answer_options="", n_agents=3, max_tokens=_AGENT.max_tokens, supervisor_model="",
                 kks_players=KKS_DEFAULT_PLAYERS, kks_seed=0)
    # the preset's bookkeeping: kept with the form (another page, a reload), never part of the config
    state.update({PRESET_QUESTION: "", PRESET_TASK: {}, PRESET_CLEARED: []})
    for i in range(MAX_AGENTS):
        for name, pattern in AGENT_KEYS.items():
            state[pattern.format(i=i)] = _agent_defaults(i)[name]
    return state


def remembered_form_keys() -> list[str]:
    """The form's session keys a reload brings back: every field, and the fields a preset or fork set
    that the form does not show."""
    return [*form_defaults(), FORM_EXTRA]


remember_keys(remembered_form_keys)  # the form owns these keys: session_memory keeps what is registered


def keep_form_state() -> None:
    """Keep the form's values while another page is shown. Each field is drawn with `persist_state`, so
    Streamlit keeps it across pages; a key Streamlit dropped all the same gets the session's last value
    back (`session_memory.KEPT`), never the default: on a page switch Streamlit keeps only the widgets the
    browser's rerun request names, and a request sent while the Debate page's live fragments refresh names
    none of the form's, so the form was emptied by a visit to another page while a debate ran.

    A key still there is left alone, not written again: a value the script writes is pushed into the
    browser's field when the widget is drawn, so writing every field on every run let a run that began
    before a person committed a field put the old value back into it, and the next commit of any field
    then sent the old value to the server (a busy machine lost a typed "Rounds: 1" that way)."""
    state = st.session_state
    last = state.get(KEPT) or {}
    for key, value in form_defaults().items():
        if key not in state:
            state[key] = last.get(key, value)


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
        state[AGENT_KEYS["stand_in_model"].format(i=i)] = agent.get("stand_in_model") or ""  # None: none chosen
    if agents:
        state["max_tokens"] = agents[0].get("max_tokens", _AGENT.max_tokens)
    state[FORM_EXTRA] = {k: v for k, v in config.items() if k not in shown}
    if state["connectivity"] == CUSTOM_GRAPH:  # a who-sees-whom mapping: kept as set, shown as text
        state[FORM_EXTRA]["connectivity"] = graph
    if isinstance(config.get("challenge"), str):  # a named challenge setting (mad_core/challenge.py): kept as set
        state["challenge"], state[FORM_EXTRA]["challenge"] = True, config["challenge"]
    return state


def apply_config(config: dict[str, Any], preset: str = "") -> None:
    """Fill the form from a config dict (call before the form's widgets are drawn); `preset`: the
    preset it comes from, whose task fields then apply while the question is its own."""
    state = config_to_state(config)
    for key, value in state.items():
        st.session_state[key] = value
    st.session_state["preset"] = preset
    if preset:
        _own_preset_task(state)
    clear_errors()


def form_config(state=None) -> dict[str, Any]:
    """The config dict the form describes (not yet validated)."""
    state = state if state is not None else st.session_state
    n = max(0, int(state["n_agents"] or 0))  # any count typed: validation says what is wrong with it

    def agent(i: int, name: str) -> Any:
        return state.get(AGENT_KEYS[name].format(i=i), _agent_defaults(i)[name])

    agents = [{
        "label": str(agent(i, "label") or "").strip(),
        "model": str(agent(i, "model") or "").strip(),
        "persona": str(agent(i, "persona") or ""),
        "temperature": float(agent(i, "temperature")),
        "max_tokens": state["max_tokens"],
    } for i in range(min(n, MAX_AGENTS))]  # more than the form shows: refused by `problems`
    for i, entry in enumerate(agents):  # a person's seat settings (validation names a bad one)
        if entry["model"] == PERSON:
            entry.update(time_limit_s=agent(i, "time_limit_s"), at_time_limit=agent(i, "at_time_limit"),
                         stand_in_model=str(agent(i, "stand_in_model") or "").strip() or None)
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
    if data["challenge"] is True and isinstance((state.get(FORM_EXTRA) or {}).get("challenge"), str):
        data["challenge"] = state[FORM_EXTRA]["challenge"]  # the box ticked: the named setting it was set to
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


def label_of(key: str) -> str:
    """A widget's label as the error summary names it ("Model 2", "Reference answer")."""
    match = re.fullmatch(r"agent_(label|model|persona|temp|seatlimit|atlimit|standin)_(\d+)", key)
    if match:
        name = _AGENT_KEY_NAMES.get(match.group(1), match.group(1))
        return AGENT_LABELS[name].format(n=int(match.group(2)) + 1)
    return LABELS.get(key, key).split(" (")[0]


def problems(state=None) -> list[tuple[str, str, str]]:
    """Every problem of the form, as (widget key, field label, message); [] when it can start."""
    state = state if state is not None else st.session_state
    found = []
    if int(state["n_agents"] or 0) > MAX_AGENTS:  # the form's own limit (a config file may have more)
        found.append(("n_agents", label_of("n_agents"), f"the form shows at most {MAX_AGENTS} agents, "
                                                        f"got {state['n_agents']}"))
    config = form_config(state)
    invalid = [(exc.field, exc.message) for exc in DebateConfig.problems(config)]  # a rule over a field at
    at_fault = {field for field, _ in invalid}  # fault is left out there; so is a missing key (below)
    keys = [(field, message) for field, message in key_problems(config) if field not in at_fault]
    for field, message in invalid + keys:  # keys: a remote model without its API key, refused before it runs
        key = widget_for(field)
        found.append((key, label_of(key) if key != "form" else field, message))
    return sorted(found, key=lambda problem: _form_position(problem[0]))


def _form_position(key: str) -> int:
    """Where the widget `key` is in the form, top to bottom (the summary lists the fields in this order)."""
    cut = FORM_ORDER.index("n_agents") + 1
    order = FORM_ORDER[:cut] + [pattern.format(i=i) for i in range(MAX_AGENTS) for pattern in AGENT_KEYS.values()] \
        + FORM_ORDER[cut:]
    return order.index(key) if key in order else len(order)


def show_errors(errors: list[tuple[str, str, str]], recheck: bool = False) -> None:
    """Show `errors` beside their fields and in the summary; `recheck`: checked again each run until fixed."""
    st.session_state[FORM_ERROR] = errors
    st.session_state[FORM_LIVE] = recheck


def clear_errors() -> None:
    st.session_state.pop(FORM_ERROR, None)
    st.session_state.pop(FORM_LIVE, None)


def error_slot(key: str) -> None:
    """Show the pending problems that belong to the widget `key`, right under it."""
    mine = [message for where, _, message in st.session_state.get(FORM_ERROR) or [] if where == key]
    if mine:
        with st.container(key=f"error_{key}"):
            for message in mine:
                st.error(model_markdown(message))  # it may quote what was typed: no image, no math


def error_summary() -> None:
    """Every pending problem by its field's label, right above Start (where the user is looking)."""
    errors = st.session_state.get(FORM_ERROR) or []
    if not errors:
        return
    with st.container(key="form_errors"):  # one short line: the messages are beside their fields
        fields = ", ".join(dict.fromkeys(md_escape(label) for _, label, _ in errors))
        st.error(f"Not started: fix {fields} (each says why beside it).", icon="⚠️")


def session_debate_running() -> bool:
    """Whether the debate this session watches is live in this server and not done."""
    debate_id = st.session_state.get(DEBATE_ID)
    debate = live.get(debate_id) if debate_id else None
    return debate is not None and not debate.done


# ----- presets --------------------------------------------------------------------------------
def _own_preset_task(example: dict[str, Any]) -> None:
    """Record that the form's question and task fields are the preset's own (`example`: its form state)."""
    blank = form_defaults()
    st.session_state[PRESET_QUESTION] = example["question"]
    st.session_state[PRESET_TASK] = {key: [example[key], 0] for key in TASK_FIELDS[1:] if example[key] != blank[key]}
    st.session_state[PRESET_CLEARED] = []


def release_preset_task(settle: bool = True) -> None:
    """While the question in the form is not the preset's, clear the preset's task fields that are as it
    set them, and remember which (for the caption). Call before the form's widgets are drawn.

    The fields stay watched until the browser has shown them cleared: a click made while the clearing run
    was on its way brings the preset's values back (Streamlit sends every widget's value with each rerun),
    all of them at once, and they are cleared again (once). A run in which any of them holds something
    else settles them (`settle`: not in the run that cleared them): one field back at the preset's value
    then is the user's own choice (e.g. the Knight-Knave-Spy answer type for their own puzzle), and stays."""
    state = st.session_state
    task = state.get(PRESET_TASK) or {}
    if not task or state.get("question") == state.get(PRESET_QUESTION):
        return
    blank, cleared = form_defaults(), list(state.get(PRESET_CLEARED) or [])
    back = [key for key, (value, _) in task.items() if state.get(key) == value]
    first = all(times == 0 for _, times in task.values())
    if back and (first or (len(back) == len(task) and all(times < 2 for _, times in task.values()))):
        for key in back:
            state[key] = blank[key]
        cleared += [key for key in back if key not in cleared]
        state[PRESET_TASK] = {key: [value, times + 1] for key, (value, times) in task.items()}
    elif settle:
        state[PRESET_TASK] = {}
    state[PRESET_CLEARED] = cleared


def _on_preset() -> None:
    """Fill the form from the chosen preset, keeping a question the user wrote (and the task fields they gave
    it); the preset's own task fields do not come with it (they belong to the preset's example question)."""
    choice = st.session_state.get("preset")
    presets = load_presets()
    if choice not in presets:
        return
    release_preset_task(settle=False)  # a previous preset's task fields left with its question
    previous = dict(st.session_state.get(PRESET_TASK) or {})  # still watched: the browser may send them back
    question = str(st.session_state.get("question") or "")
    own = {key: st.session_state.get(key) for key in TASK_FIELDS} \
        if question.strip() and question != st.session_state.get(PRESET_QUESTION) else None
    apply_config(presets[choice]["config"], preset=choice)
    if own:
        st.session_state.update(own)
        st.session_state[PRESET_CLEARED] = list(st.session_state[PRESET_TASK])
        st.session_state[PRESET_TASK] = previous
    st.session_state[PRESET_NO_SETTLE] = True


def use_preset_question() -> None:
    """Replace the user's question (and its task fields) with the chosen preset's example and its task fields."""
    presets = load_presets()
    choice = st.session_state.get("preset")
    if choice in presets:
        example = config_to_state(presets[choice]["config"])
        st.session_state.update({key: example[key] for key in TASK_FIELDS})
        _own_preset_task(example)


def changed_from_preset(name: str, state=None) -> list[str]:
    """The form's settings that differ from preset `name`'s, by widget key (the question and its task fields
    only while the question is the preset's: another question's are the user's anyway)."""
    state = state if state is not None else st.session_state
    preset = config_to_state(load_presets()[name]["config"])
    own_question = state.get("question") == state.get(PRESET_QUESTION)
    keys = [key for key in FIELD_KEYS if own_question or key not in TASK_FIELDS]
    keys += ["n_agents", "max_tokens"]
    shown = max(0, min(int(state.get("n_agents") or 0), int(preset["n_agents"]), MAX_AGENTS))
    keys += [pattern.format(i=i) for i in range(shown) for pattern in AGENT_KEYS.values()]
    changed = [key for key in keys if state.get(key) != preset[key]]
    if (state.get(FORM_EXTRA) or {}) != preset[FORM_EXTRA]:
        changed.append("form")  # a setting the form does not show (a fork's, a config file's)
    return changed


def _changed_names(changed: list[str], most: int | None = None) -> str:
    names = list(dict.fromkeys("other settings" if key == "form" else label_of(key).split(",")[0] for key in changed))
    if most is not None and len(names) > most:
        names = names[:most] + [f"{len(names) - most} more"]
    return ", ".join(names)


def preset_size(config: dict[str, Any]) -> str:
    """How big a preset's debate is, before anyone starts it: agents, rounds and the model calls they imply
    (`live.plan_calls`); a small local model answers them one after another."""
    plan = live.plan_calls(config)
    agents, rounds = len(config.get("agents") or []), int(config.get("rounds") or 1)
    fewest, most = plan.range(rounds)
    calls = f"about {fewest} model calls" if fewest == most else f"about {fewest} to {most} model calls"
    return (f"Size: {agents} agent{'s' if agents != 1 else ''}, {rounds} round{'s' if rounds != 1 else ''}: "
            f"{calls}. On the small default model each call takes seconds to a minute; the progress bar "
            f"shows the time left once it runs.")


def _render_preset_note(chosen: str, presets: dict[str, Any], changed: list[str]) -> None:
    """Under the picker: the preset's source, whose question it is, what of the preset was cleared or changed."""
    with st.container(key="preset_note"):
        if presets[chosen].get("lesson"):  # a classroom preset: what the lesson shows, first
            st.caption(f"**What it shows:** {md_escape(presets[chosen]['lesson'])}")
        st.caption(f"Source: {presets[chosen]['source']}")
        st.caption(preset_size(presets[chosen]["config"]))
        if st.session_state.get("question") != st.session_state.get(PRESET_QUESTION):
            blank = form_defaults()  # a cleared field the user has filled since is theirs: not said to be cleared
            cleared = [key for key in st.session_state.get(PRESET_CLEARED) or []
                       if st.session_state.get(key) == blank[key]]
            if cleared:
                st.caption(f"The question is yours: what the preset set for its example question is cleared "
                           f"({_changed_names(cleared).lower()}).")
            else:
                st.caption("The question is yours, not the preset's example.")
            st.button("Use the preset's example question instead", key="use_preset_question",
                      on_click=use_preset_question)
        st.caption(f"Changed from the preset: {_changed_names(changed)}." if changed
                   else "The preset set the other settings.")


# ----- actions --------------------------------------------------------------------------------
def start_debate() -> None:
    """Start button: find every problem (nothing starts while there is one), then start (or fork)
    the debate in the background."""
    clear_errors()
    if session_debate_running():  # the button is disabled then; a click sent just before it was is refused
        show_errors([("form", "Start", "this session's debate is still running: stop it or let it finish first")])
        return
    found = problems()
    if found:
        show_errors(found, recheck=True)
        return
    try:
        config = DebateConfig.from_dict(form_config())
        fork = st.session_state.get(FORK_REQUEST)
        if fork:
            debate = live.start_fork(fork["parent_id"], fork["seq"], open_store(), config, owner=owner_id())
        else:
            debate = live.start(config, store=open_store(), owner=owner_id())
    except ConfigError as exc:  # e.g. a fork's config that its parent cannot take
        show_errors([(widget_for(exc.field), exc.field, exc.message)])
        return
    except Exception as exc:  # noqa: BLE001 - e.g. a fork of a debate that was deleted meanwhile
        show_errors([("form", "Start", f"Could not start: {exc}")])
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
        show_errors([("kks_players", label_of("kks_players"), str(exc))])
        return
    st.session_state.update(question=puzzle.text, reference=assignment_text(puzzle.solution, puzzle.names),
                            answer_type="kks", answer_options=options_text(puzzle.names), paradigm=KKS_PARADIGM,
                            protocol="kks_player_vote", aad=False, rounds=n + 2, max_rounds=n + 2)
    st.session_state.update({PRESET_TASK: {}, PRESET_CLEARED: []})  # the task fields are the puzzle's own
    clear_errors()


def generate_personas() -> None:
    """Ask the first agent's model for one expert persona per agent, as a checked list (the engine's
    persona generation, `mad_core.personas`); when it cannot give one, say why and change nothing."""
    st.session_state.pop(PERSONA_ERROR, None)
    question, task = str(st.session_state["question"] or "").strip(), st.session_state["task"]
    if not question:
        st.session_state[PERSONA_ERROR] = "Write the question first: personas are chosen for it."
        return
    n = int(st.session_state["n_agents"] or 0)
    if not 1 <= n <= MAX_AGENTS:
        st.session_state[PERSONA_ERROR] = f"Set the number of agents first (1 to {MAX_AGENTS})."
        return
    model = str(st.session_state[AGENT_KEYS["model"].format(i=0)] or "").strip()
    problem = validate_model_name(model)
    if problem:
        st.session_state[PERSONA_ERROR] = f"The model could not suggest personas: {problem} Write them yourself."
        return
    support = response_format_support(model)

    def ask(messages: list[dict], reply: ReplyFormat) -> tuple[str | None, str]:
        result = call_model(model, messages, max_tokens=reply.max_tokens(reply.tokens, support), temperature=0.7,
                            response_format=reply.response_format(support))
        return (result.text, "") if result.status == "ok" else (None, result.error or result.status)

    found = generate_personas_for(question, task, [str(i) for i in range(n)], ask,
                                  options=options_list(st.session_state["answer_options"]))
    if not found.ok:
        st.session_state[PERSONA_ERROR] = (f"The model could not suggest personas: {found.reason} "
                                           f"(asked {found.attempts} times). Write them yourself.")
        return
    for i in range(n):
        st.session_state[AGENT_KEYS["persona"].format(i=i)] = found.personas[str(i)]


# ----- rendering ------------------------------------------------------------------------------
def _doc(kind: str, name: str | None) -> str:
    if not name:
        return ""
    try:
        doc = registry.get(kind, name).__doc__ or ""
    except Exception:  # noqa: BLE001
        return ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _choice(kind: str, key: str) -> None:
    """A component picker with the description of the option now chosen (the widget's own value)."""
    chosen = st.selectbox(LABELS[key], registry.names(kind), key=key, persist_state=PERSIST)
    with st.container(key=f"{key}_doc"):
        st.caption(_doc(kind, chosen))
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
    """The whole debate form (in a scroll box, so Start stays in sight), the summary of its problems
    and its Start button (disabled while this session's debate runs). The page's CSS (app.py) lets the
    box take the column's height less what follows it: the summary shrinks the box and Start stays
    where it was clicked, both in view at 1280x720."""
    if st.session_state.get(FORM_LIVE) and st.session_state.get(FORM_ERROR):
        show_errors(problems(), recheck=True)  # a field fixed since Start loses its message
    with st.container(height=height, key="setup_form"):
        _render_fields()
    error_slot("form")
    error_summary()  # right above Start: the box gives it room, the button stays where it was clicked
    label = "Start fork" if st.session_state.get(FORK_REQUEST) else "Start debate"
    running = session_debate_running()
    why = "This session's debate is still running: stop it (sidebar) or let it finish, then start another."
    st.button(label, key="start", type="primary", on_click=start_debate, width="stretch", disabled=running,
              help=why if running else None)
    if running:  # a disabled button shows no tooltip: say it beside it too
        with st.container(key="start_wait"):
            st.caption(why)


def _render_fields() -> None:
    presets = load_presets()
    # the question was typed over: the preset's reference must not grade it
    release_preset_task(settle=not st.session_state.pop(PRESET_NO_SETTLE, False))
    current = st.session_state.get("preset")
    changed = changed_from_preset(current) if current in presets else []
    # What was changed goes in the label, never in the options' texts: Streamlit 1.67 sends a selectbox's
    # value as its option's text, so a text that changed between runs would lose the choice.
    label = f"Preset (changed: {_changed_names(changed, 2)})" if changed else "Preset"
    chosen = st.selectbox(label, [""] + list(presets), key="preset", persist_state=PERSIST, on_change=_on_preset,
                          format_func=lambda p: presets[p]["title"] if p in presets else "(none: fill in yourself)")
    if chosen in presets:
        _render_preset_note(chosen, presets, changed)
    # height="content": a fixed-height text_area collapses to 0 px inside a scrolling container (Streamlit 1.67).
    st.text_area(LABELS["question"], key="question", persist_state=PERSIST, height="content",
                 placeholder="What should the agents answer?")
    error_slot("question")
    st.text_input(LABELS["task"], key="task", persist_state=PERSIST, placeholder="e.g. Answer with the letter only.")
    error_slot("task")
    _render_reference()
    _render_answer_type()
    st.text_area(LABELS["answer_options"], key="answer_options", persist_state=PERSIST, height="content")
    error_slot("answer_options")
    left, middle, right = st.columns([2, 2, 3], vertical_alignment="bottom")
    left.number_input(LABELS["kks_players"], step=1, key="kks_players", persist_state=PERSIST)
    middle.number_input(LABELS["kks_seed"], step=1, key="kks_seed", persist_state=PERSIST)
    right.button("New puzzle", key="generate_kks", on_click=generate_kks_puzzle,
                 help="Generates a Knight-Knave-Spy puzzle: fills the question, the reference (its unique "
                      "solution), the answer type and the player names, and selects seed 001's per-player debate.")
    error_slot("kks_players")

    _render_agents()
    _render_discussion()
    _render_decision()


def _render_agents() -> None:
    """The form's Agents section: how many, each agent's fields, the replies' length."""
    st.subheader("Agents")
    n = st.number_input(LABELS["n_agents"], step=1, key="n_agents", persist_state=PERSIST)
    error_slot("n_agents")
    st.button("Suggest expert personas", key="generate_personas", on_click=generate_personas,
              help="Asks the first agent's model for one short expert persona per agent, for this question.")
    if st.session_state.get(PERSONA_ERROR):
        with st.container(key="persona_error"):
            st.warning(md_escape(st.session_state[PERSONA_ERROR]))
    for i in range(max(0, min(int(n or 0), MAX_AGENTS))):
        _render_agent(i)
    _number("max_tokens", step=16)


def _render_discussion() -> None:
    """The form's Discussion section: how the agents talk, for how many rounds."""
    st.subheader("Discussion")
    _choice("paradigm", "paradigm")
    _choice("response_generator", "response_generator")
    level = st.selectbox(LABELS["tit_for_tat"], [TFT_NONE, 0, 1, 2, 3], key="tit_for_tat", persist_state=PERSIST,
                         format_func=_tit_for_tat_label)
    st.caption("No instruction about disagreeing (two-sided debates use level 2)." if level == TFT_NONE
               else f"Every agent is told: {prompts.TIT_FOR_TAT[level]}")
    error_slot("tit_for_tat")
    _choice("ordering", "ordering")
    if st.session_state.get("paradigm") == KKS_PARADIGM:
        _render_kks_fields()
    _render_connectivity()
    _model_choice("summarizer_model")
    left, right = st.columns(2)
    with left:
        _number("rounds")
        _number("memory_window")
    with right:
        _number("max_rounds")
        _number("seed")
    st.checkbox(LABELS["aad"], key="aad", persist_state=PERSIST)
    error_slot("aad")
    for key in ("confidence", "confidence_visible", "challenge"):
        st.checkbox(LABELS[key], key=key, persist_state=PERSIST)


def _render_decision() -> None:
    """The form's Decision section: the protocol and its settings."""
    st.subheader("Decision")
    _choice("protocol", "protocol")
    left, right = st.columns(2)
    with left:
        _number("consensus_threshold", step=0.05)
    with right:
        _number("cumulative_points")
    _model_choice("judge_model")
    with st.expander("Advanced", key="advanced"):
        for key in ("extract_final_answers", "judge_adaptive_break", "auto_personas"):
            st.checkbox(LABELS[key], key=key, persist_state=PERSIST)
        _number("debate_subrounds")
        _number("vote_retries")


def _number(key: str, step: int | float = 1) -> None:
    """A number field that takes whatever is typed (no bounds: validation names a bad value), its error under it."""
    st.number_input(LABELS[key], step=step, key=key, persist_state=PERSIST)
    error_slot(key)


def _model_choice(key: str) -> None:
    """An optional model (empty: the first agent's), any litellm name typed, its error under it."""
    st.selectbox(LABELS[key], [""] + _model_options(st.session_state.get(key)), key=key, persist_state=PERSIST,
                 accept_new_options=True, format_func=lambda m: m or "(same as the first agent)")
    error_slot(key)


def _render_reference() -> None:
    """The reference answer: masked unless "show" is ticked (see the module docstring for why not a password input)."""
    st.text_input(LABELS["reference"], key="reference", persist_state=PERSIST)
    if not st.checkbox("Show the reference answer", key="show_reference", persist_state=PERSIST):
        st.html(MASK_REFERENCE)
    error_slot("reference")


def _use_number_type() -> None:
    st.session_state["answer_type"] = "number"


def _render_answer_type() -> None:
    """The answer type; while it is still free text and the reference reads as a number ("0.05", "$0.05"),
    a suggestion of the number type (`suggest_number_type`): one click applies it, nothing changes by itself."""
    st.selectbox(LABELS["answer_type"], list(ANSWER_KINDS), key="answer_type", persist_state=PERSIST,
                 format_func=lambda k: ANSWER_KINDS[k])
    error_slot("answer_type")
    if st.session_state.get("answer_type") != "text" or not reads_as_number(st.session_state.get("reference")):
        return
    with st.container(key="suggest_number_type"):
        st.caption("This reference reads as a number: use answer type 'number'? (As free text, 0.05 and 0.050 "
                   "would be different answers.)")
        st.button("Use answer type 'number'", key="use_number_type", on_click=_use_number_type)


def _render_kks_fields() -> None:
    """Seed 001's factors of the per-player debate (Table 1): debate depth and order, the supervisor."""
    with st.container(border=True, key="kks_fields"):
        st.caption("Knight-Knave-Spy player by player (seed 001 §4.1): proposals, then for each player a "
                   "debate and a self-adjustment, then final assignments and a per-player vote. It runs "
                   "players + 2 rounds, whatever the round fields say.")
        left, right = st.columns(2)
        left.number_input(LABELS["kks_depth"], step=1, key="kks_depth", persist_state=PERSIST)
        right.selectbox(LABELS["kks_order"], ["fixed", "agreed"], key="kks_order", persist_state=PERSIST,
                        format_func=lambda o: {"fixed": "fixed (the puzzle's order)",
                                               "agreed": "agreed by the agents"}[o])
        error_slot("kks_depth")
        error_slot("kks_order")
        _model_choice("supervisor_model")


def _render_connectivity() -> None:
    """Who sees whom (seed 003): full, ring, or the mapping a preset or fork set (shown, kept as is)."""
    custom = (st.session_state.get(FORM_EXTRA) or {}).get("connectivity")
    options = list(CONNECTIVITY_NAMES) + ([CUSTOM_GRAPH] if isinstance(custom, dict) else [])
    if st.session_state.get("connectivity") not in options:
        st.session_state["connectivity"] = "full"
    st.selectbox(LABELS["connectivity"], options, key="connectivity", persist_state=PERSIST,
                 help="full: every agent sees every other; ring: each agent sees its two neighbours "
                      "in the configured agent order (seed 003's sparse connectivity).")
    if st.session_state["connectivity"] == CUSTOM_GRAPH:
        st.text("; ".join(f"{viewer} sees {', '.join(seen) or 'nobody'}" for viewer, seen in custom.items()))
    error_slot("connectivity")


def _render_seat(keys: dict[str, str]) -> None:
    """A person's seat settings: the time limit and what happens at it (a stand-in model, or a skip)."""
    with st.container(key=f"seat_settings_{keys['model']}"):
        left, right = st.columns(2)
        left.number_input(label_of(keys["time_limit_s"]), step=10.0, key=keys["time_limit_s"], persist_state=PERSIST)
        right.selectbox(label_of(keys["at_time_limit"]), list(AT_TIME_LIMIT), key=keys["at_time_limit"],
                        persist_state=PERSIST, format_func=lambda v: AT_LIMIT_WORDS.get(v, v))
        error_slot(keys["time_limit_s"])
        error_slot(keys["at_time_limit"])
        if st.session_state.get(keys["at_time_limit"]) == "model":
            st.selectbox(label_of(keys["stand_in_model"]), [""] + _model_options(st.session_state.get(keys["stand_in_model"])),
                         key=keys["stand_in_model"], persist_state=PERSIST, accept_new_options=True,
                         format_func=lambda m: m or "(choose the model that speaks for the person)")
        error_slot(keys["stand_in_model"])


def _render_agent(i: int) -> None:
    keys = {name: pattern.format(i=i) for name, pattern in AGENT_KEYS.items()}
    with st.container(border=True):
        left, right = st.columns([2, 3])
        with left:
            st.text_input(label_of(keys["label"]), key=keys["label"], persist_state=PERSIST)
        with right:
            options = list(dict.fromkeys(_model_options(st.session_state.get(keys["model"])) + [PERSON]))
            st.selectbox(label_of(keys["model"]), options, key=keys["model"], persist_state=PERSIST,
                         accept_new_options=True, format_func=lambda m: "a person" if m == PERSON else m,
                         help="Any litellm model name (provider/model) can be typed; the Models page lists the "
                              "providers. \"a person\": somebody types this agent's turns (a seat).")
        error_slot(keys["label"])
        error_slot(keys["model"])
        if st.session_state.get(keys["model"]) == PERSON:
            _render_seat(keys)
        st.text_input(label_of(keys["persona"]), key=keys["persona"], persist_state=PERSIST,
                      placeholder="optional: who this agent is")
        error_slot(keys["persona"])
        st.slider(label_of(keys["temperature"]), 0.0, 2.0, step=0.05, key=keys["temperature"], persist_state=PERSIST)
        error_slot(keys["temperature"])

