"""The presets in assets/presets follow their papers, value by value, and run offline.

Every preset loads through `mad_core.presets.load_presets` (the app and the CLI share it), validates as a DebateConfig, uses only the offline
default model and grades its own reference with its answer type. A paper preset names its paper (seed,
authors, title, sections) in `source` and in its comment block, and matches the table of paper values
below field by field: an edit that drifts from the paper fails here. Each one also runs end to end with
the scripted model and makes the number of discussion turns its paper's setup implies. The sections
cited here are explained at length in each YAML's comment block. A classroom preset (a `lesson`) is
named for what the lesson shows, comes first in the picker, asks a short question and runs end to end
in exactly the calls its size note announces.
"""
from __future__ import annotations

import copy
import re
from collections import Counter

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.config import DEFAULT_MODEL
from mad_core.events import DebateFinished, DecisionReached, TurnFinished, VoteCast
from mad_core.live import plan_calls
from mad_core.presets import PRESET_DIR, load_presets
from mad_core.tasks.answer_types import DebateAnswerType, is_correct, read_answer

OFFLINE_MODEL = "local/smollm2-135m"
PRESETS = load_presets()
PAPER_PRESETS = {name: p for name, p in PRESETS.items() if not p["lesson"]}
LESSONS = {name: p for name, p in PRESETS.items() if p["lesson"]}

# Seed 004's default personas for one model run three times (its debate() code, `_default_personas`).
DU_PERSONAS = [
    "You are an analytical reasoner. Be rigorous, cite evidence, and prefer mathematical or logical arguments.",
    "You are a critical skeptic. Look for missing assumptions, alternative explanations, and edge cases.",
    "You are a creative thinker. Consider unconventional angles and lateral connections.",
]

# The paper's value of every knob, per preset. `agents` is the number of agents, `temperature` every
# agent's temperature, `personas` the agents' fixed personas ("" = none). Keys not named keep the
# engine's default and are not part of the paper's setup.
_MALLM = {  # seed 000 (Kaesberg et al. 2025, MALLM): shared by its three presets
    "agents": 3,                     # §3.1 "three ... expert personas"; App. F num_agents: 3
    "auto_personas": True,           # §3.1 (Kim et al. experts); App. C; App. F agent_generator: "expert"
    "personas": ["", "", ""],        # generated, none fixed (App. F num_neutral_agents: 0)
    "persona_model": None,           # App. C: personas come from the agents' own LLM
    "paradigm": "memory",            # App. F discussion_paradigm: "memory"
    "connectivity": "full",          # §3.1 "all agents exchange messages with one another"
    "response_generator": "simple",  # §3.2 "our default"; App. F response_generator: "simple"
    "max_rounds": 5,                 # §4.1 "terminated after five turns"; Table 2 (App. F's 10 is the class default)
    "memory_window": 2,              # §3.1 "up to two turns"; App. F visible_turns_in_memory: 2 (MALLM: turn >= t - 2)
    "temperature": 1.0,              # paper silent; MALLM sends none -> OpenAI chat default 1.0 (to confirm)
    "extract_final_answers": True,   # App. E.1 extraction (voting; consensus: the last agent solves, App. C)
    "challenge": False,              # the challenge step is the §4.2 ablation only
    "confidence": False,             # not part of seed 000
    "ordering": "fixed",             # agents speak in their turn order (§3.1)
    "tit_for_tat": None,             # a seed 002 knob, not MALLM's
    "judge_model": None,             # no judge in MALLM's voting/consensus protocols
}
_MALLM_VOTING = {
    **_MALLM,
    "protocol": "simple_voting",     # §3.2 / App. C simple voting (§4.2-§4.3 experiments)
    "rounds": 3,                     # §3.1 "start voting after the third turn"; App. C; MALLM vote_turn = 3
    "vote_retries": 9,               # paper silent; MALLM voting code: 10 attempts ("while retries < 10")
    "all_agents_drafting": True,     # §4.3 AAD (CI "starts similarly to AAD")
}
_SEED_003 = {  # seed 003 (Zhang et al., MADC): Table 1 "10 agents 1 debate round"
    "agents": 10,                    # Table 1; appendix examples "10 agents"
    "paradigm": "simultaneous",      # setup: "we choose the basic Simultaneous-Talk strategy"
    "connectivity": "full",          # setup: "the traditional method of full connectivity"
    "all_agents_drafting": True,     # Fig. 2: "In the initial round ... each role independently uses CoT"
    "rounds": 2,                     # initial round + 1 debate round (Table 1; code actions ["expand", "exchange"])
    "max_rounds": 2,                 # fixed length: no early stop, no extra round
    "protocol": "solution_counting", # final answer = most frequent answer (appendix "Final Answer"; code most_frequent)
    "extract_final_answers": False,  # code parses "(X)" with a regex; no extraction call
    "memory_window": None,           # each agent keeps its whole context (code)
    "auto_personas": False,          # "we choose not to use special agents profiling"
    "personas": [""] * 10,
    "temperature": 1.0,              # paper silent; code sends none -> OpenAI chat default 1.0 (to confirm)
    "response_generator": "simple",
    "tit_for_tat": None,
    "judge_model": None,
    "challenge": False,
    "confidence": False,
}
PAPER: dict[str, dict] = {
    "mallm_voting_aad": {**_MALLM_VOTING},  # seed 000 §4.3 AAD (Fig. 8) with simple voting
    "mallm_collective_improvement": {
        **_MALLM_VOTING,
        "paradigm": "collective_refinement",  # seed 000 §4.3 CI: only the previous turn's solutions are shown
    },
    "mallm_consensus": {
        **_MALLM,
        "protocol": "majority_consensus",  # seed 000 §3.2 "more than 50%" (App. C: 50%; 2 of 3 either way)
        "consensus_threshold": None,       # the protocol's own fraction
        "rounds": 1,                       # consensus checked after every answer from turn 1 (App. C; Table 2)
        "all_agents_drafting": False,      # App. F all_agents_generate_first_draft: False (§4.1 baseline)
    },
    "liang_two_sided": {  # seed 002 (Liang et al., MAD)
        "agents": 2,                       # §3.2 "two debaters (affirmative and negative)"; Table 7 "2 (Default)"
        "paradigm": "two_sided",           # §2 debaters speak one by one in a fixed order
        "ordering": "fixed",               # §2 "in a fixed order"
        "connectivity": "full",            # §2 both sides and the judge follow the whole exchange
        "protocol": "judge",               # §2 judge
        "judge_model": OFFLINE_MODEL,      # same backbone as the debaters (§3.2; Table 6 rows 1-2), named
        "judge_adaptive_break": True,      # §2 discriminative mode; §4.3 adaptive break
        "rounds": 3,                       # §4.3 "maximum debate iteration to 3"; MAD code max_round=3
        "max_rounds": 3,                   # same limit: judge asked after round 3 too, then extractive (§2)
        "tit_for_tat": 2,                  # Table 11 (App. D) level 2 "(Default)"
        "temperature": 0.0,                # §3.2 "setting temperature to 0"; MAD code temperature=0
        "memory_window": None,             # §2 debaters see the whole debate history H
        "extract_final_answers": False,    # the judge states the answer; no extraction call in MAD
        "auto_personas": False,            # the roles are the two sides only
        "personas": ["", ""],
        "all_agents_drafting": False,      # the negative answers the affirmative (§2)
        "challenge": False,
        "confidence": False,
    },
    "du_simultaneous": {  # seed 004 (debate() after Du et al. 2023)
        "agents": 3,                       # "Same-model debate": n_agents_if_single=3
        "personas": DU_PERSONAS,           # "three runs of the same model with different personas"
        "auto_personas": False,
        "temperature": 0.7,                # the example's openai_complete(..., temperature=0.7)
        "paradigm": "simultaneous",        # everyone revises after seeing the others' drafts
        "connectivity": "full",            # a revision quotes every other agent's draft (code)
        "all_agents_drafting": True,       # "Multiple agents draft independent answers"
        "rounds": 3,                       # rounds=2 revisions + the initial drafts: cost model k*(R+1)
        "max_rounds": 3,                   # the API never adds a round
        "memory_window": 1,                # a revision quotes the drafts of round r-1 only (code)
        "protocol": "convergence",         # "Without judge=: The convergence winner is picked automatically"
        "judge_model": None,
        "extract_final_answers": False,    # no extraction call in debate()
        "tit_for_tat": None,
        "ordering": "fixed",
        "challenge": False,
        "confidence": False,
    },
    "madc_ordering": {**_SEED_003, "ordering": "madc"},            # seed 003 Table 1 MAD+MADC; Algorithm 1
    "wu_kks_per_player": {  # seed 001 (Wu et al.): anchor configuration A (§5.2) of the §4.1 protocol
        "agents": 3,                       # §5.2 A "Agent team size = 3"
        "paradigm": "kks_per_player",      # §4.1 player-by-player debate loop
        "protocol": "kks_player_vote",     # §4.1 final per-player majority vote, supervisor on ties
        "confidence": True,                # §4.1 initial proposal reports a confidence score
        "confidence_visible": False,       # A "Confidence visibility = hidden"
        "kks_order": "fixed",              # A "Debate order = fixed"
        "kks_depth": 1,                    # A "Debate depth = 1"
        "answer_type": "kks",              # §3 a role for every player
        "all_agents_drafting": False,      # the initial proposals are the independent drafts
        "connectivity": "full",
        "personas": ["", "", ""],
        "auto_personas": False,
        "tit_for_tat": None,
        "challenge": False,
    },
    "madc_truth_last": {**_SEED_003, "ordering": "truth_last"},    # seed 003 Table 1 MAD+Truth ("Truth Last")
}

# Discussion turns (drafts included) the paper's setup implies when the debate runs its course:
# (drafts, discussion replies, round of the decision).
TURNS = {
    # seed 000: 3 agents x 3 rounds before the vote (§3.1), round 1 = the AAD drafts (§4.3)
    "mallm_voting_aad": (3, 6, 3),
    "mallm_collective_improvement": (3, 6, 3),
    # seed 000: the proposer, then one agreement: 2 of 3 >= 50% ends it right away (§3.2; App. C; Table 2 turn 1)
    "mallm_consensus": (0, 2, 1),
    # seed 002: 2 debaters x 3 iterations when the judge never breaks early (§4.3), then extractive mode (§2)
    "liang_two_sided": (0, 6, 3),
    # seed 004: k * (R + 1) = 3 * (2 + 1) agent calls (cost model): 3 drafts + 2 revision rounds
    "du_simultaneous": (3, 6, 3),
    # seed 003: 10 agents x (initial CoT round + 1 debate round) (Table 1)
    "madc_ordering": (10, 10, 2),
    "madc_truth_last": (10, 10, 2),
    # seed 001: no draft/discussion turns of the other paradigms; its own phases are counted in KKS_TURNS
    "wu_kks_per_player": (0, 0, 7),
}
# seed 001 §4.1 with 3 agents, 5 players, depth 1: (proposals, debate replies, self-adjustments, finals).
KKS_TURNS = {"wu_kks_per_player": (3, 15, 15, 3)}


def preset_config(name: str) -> DebateConfig:
    return DebateConfig.from_dict(copy.deepcopy(PRESETS[name]["config"]))


def preset_text(name: str) -> str:
    return (PRESET_DIR / f"{name}.yaml").read_text(encoding="utf-8")


def test_every_preset_has_its_paper_table():
    assert PRESETS, "no preset found"
    assert set(PAPER_PRESETS) == set(PAPER) == set(TURNS)


# ----- loading, validation, offline, source -------------------------------------------------------
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_loads_and_validates(name):
    preset = PRESETS[name]
    assert preset["title"].strip()
    assert set(preset) == {"title", "source", "lesson", "config"}
    assert "gaps" not in preset["config"]  # gaps live in comments: DebateConfig refuses unknown keys
    DebateConfig.from_dict(copy.deepcopy(preset["config"]))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_runs_on_the_offline_default_model(name):
    cfg = preset_config(name)
    assert DEFAULT_MODEL == OFFLINE_MODEL
    assert {agent.model for agent in cfg.agents} == {OFFLINE_MODEL}
    assert cfg.judge_model in (None, OFFLINE_MODEL)
    assert cfg.persona_model in (None, OFFLINE_MODEL)
    assert getattr(cfg, "summarizer_model", None) in (None, OFFLINE_MODEL)
    assert all(agent.max_tokens <= 128 for agent in cfg.agents)  # small replies for the small model


@pytest.mark.parametrize("name", sorted(PAPER_PRESETS))
def test_preset_names_its_paper_and_sections(name):
    preset, text = PRESETS[name], preset_text(name)
    seeds = re.findall(r"\bseed (00[0-4])\b", preset["source"])
    assert seeds and len(set(seeds)) == 1, preset["source"]
    assert f"(seed {seeds[0]})" in preset["title"]
    assert re.search(r"(§|App\.|Table|Algorithm|section|Cost model)", preset["source"])
    header = text.split("\ntitle:", 1)[0]
    assert header.startswith("#") and f"seed {seeds[0]}" in header
    assert "Where each value comes from" in header and "Gaps" in header


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_grades_its_reference_with_its_answer_type(name):
    # A preset with a reference says how answers are read, so accuracy and the "correct" mark mean
    # something: free text would grade "The farmer has 9 sheep left." wrong against "9".
    cfg = preset_config(name)
    kind = DebateAnswerType.of(PRESETS[name]["config"])
    assert cfg.reference and kind.kind != "text", name
    assert read_answer(kind.kind, cfg.reference, **kind.keywords).valid
    # Must not happen: the reference itself (stated as an agent would) graded wrong.
    assert is_correct(kind.kind, f"After checking each step, the answer is {cfg.reference}.", cfg.reference,
                      **kind.keywords)


def test_preset_answer_types_grade_a_plain_right_answer():
    du, madc = PRESETS["du_simultaneous"]["config"], PRESETS["madc_truth_last"]["config"]
    assert is_correct("number", "The farmer has 9 sheep left.", du["reference"])
    assert is_correct("choice", "The answer is (D) The minivan is the second-newest.", madc["reference"],
                      choices=madc["answer_options"])
    assert not is_correct("choice", "The answer is (C) The sedan is the second-newest.", madc["reference"],
                          choices=madc["answer_options"])


# ----- the paper's values, field by field ------------------------------------------------------------
def _field(cfg: DebateConfig, key: str):
    if key == "agents":
        return len(cfg.agents)
    if key == "temperature":
        temps = {agent.temperature for agent in cfg.agents}
        return temps.pop() if len(temps) == 1 else sorted(temps)
    if key == "personas":
        return [agent.persona for agent in cfg.agents]
    return getattr(cfg, key)


@pytest.mark.parametrize("name,key", [(name, key) for name in sorted(PAPER) for key in PAPER[name]])
def test_preset_matches_its_paper(name, key):
    assert _field(preset_config(name), key) == PAPER[name][key]


def test_truth_last_knows_the_answer():
    # seed 003 "Truth Last" needs the correct answer; CASE-54's is (D) (the minivan is the second-newest).
    assert preset_config("madc_truth_last").reference == "D"
    assert preset_config("madc_ordering").question == preset_config("madc_truth_last").question


# ----- end to end with the scripted model -------------------------------------------------------------
def scripted(cfg: DebateConfig, model: str) -> DebateConfig:
    """The preset with every model (agents, judge, personas) replaced by the scripted one."""
    data = copy.deepcopy(cfg.to_dict())
    for agent in data["agents"]:
        agent["model"] = model
    if data["judge_model"]:
        data["judge_model"] = model
    if data["auto_personas"]:
        data["persona_model"] = model
    if data.get("summarizer_model"):
        data["summarizer_model"] = model
    return DebateConfig.from_dict(data)


def reply(messages, info):
    """A cooperative debater: agrees and answers C; the judge never breaks early, then answers."""
    meta = info["metadata"]
    kind, agent = meta["kind"], meta["agent"]
    if kind == "persona":  # one expert a request (seed 000 App. C), a new one for each panel seat
        seated = messages[-1]["content"].count("\n- ")
        return f"{('Geologist', 'Historian', 'Chemist', 'Linguist', 'Botanist')[seated]}: knows the subject"
    if kind == "vote":
        return "1"
    if kind == "extraction":
        return "C"
    if kind == "judge":
        return "Decision: NO\nAnswer:" if "Decision:" in messages[-1]["content"] else "Weighed.\nFinal answer: C"
    if kind in ("proposal", "adjustment", "final"):  # seed 001: a complete assignment (the preset's solution)
        return f"Final answer: {PRESETS['wu_kks_per_player']['config']['reference']}"
    if kind == "debate":  # seed 001: one player's role
        return '{"role": "knight", "reasoning": "its statement holds"}'
    return f"AGREE. {agent} reasons it through.\nFinal answer: C"


@pytest.mark.parametrize("name", sorted(PAPER_PRESETS))
def test_preset_runs_end_to_end_with_the_papers_number_of_turns(name, script):
    model, _ = script(reply)
    cfg = scripted(preset_config(name), model)
    events = list(DebateEngine(cfg).run())
    finished = [e for e in events if isinstance(e, DebateFinished)]
    assert [e.status for e in finished] == ["finished"], finished
    turns = [e.turn for e in events if isinstance(e, TurnFinished)]
    kinds = Counter(t.kind for t in turns)
    drafts, replies, decided_in = TURNS[name]
    assert (kinds["draft"], kinds["discussion"]) == (drafts, replies)
    if name in KKS_TURNS:
        assert (kinds["proposal"], kinds["debate"], kinds["adjustment"], kinds["final"]) == KKS_TURNS[name]
    assert all(t.status == "ok" for t in turns)
    decision = [e for e in events if isinstance(e, DecisionReached)]
    assert len(decision) == 1 and decision[0].round == decided_in and decision[0].fallback is None
    n = len(cfg.agents)
    if cfg.all_agents_drafting:  # the drafts are round 1, one per agent, and nothing else is in round 1
        assert sorted(t.agent for t in turns if t.round == 1 and t.kind in ("draft", "discussion")) == \
            sorted(a.label for a in cfg.agents)
        assert all(t.kind == "draft" for t in turns if t.round == 1 and t.kind in ("draft", "discussion"))
    if cfg.auto_personas:  # seed 000 App. C: one generated expert per agent
        assert kinds["persona"] == n
    if cfg.protocol == "simple_voting":  # one ballot per agent, cast once after round 3 (seed 000 §3.1)
        votes = [e for e in events if isinstance(e, VoteCast)]
        assert len(votes) == n and {v.round for v in votes} == {3}
    if cfg.protocol == "judge":  # seed 002 §2: the judge rules after every iteration, then extracts (no verdict)
        judged = [t for t in turns if t.kind == "judge"]
        rulings = [t.round for t in judged if "Decision:" in t.prompt[-1]["content"]]
        assert rulings == [1, 2, 3] and len(judged) == len(rulings) + 1
        assert decision[0].details["mode"] == "extractive"


# ----- classroom presets ------------------------------------------------------------------------------
def test_classroom_presets_come_first_named_for_their_lesson():
    assert len(LESSONS) >= 3
    assert list(PRESETS)[:len(LESSONS)] == list(LESSONS)  # first in the picker
    for name, preset in LESSONS.items():
        # named for what the lesson shows, never after a paper
        assert preset["title"].endswith("?") and "seed" not in preset["title"].lower(), name
        assert len(preset["lesson"]) > 40 and "lesson" not in preset["config"]
        assert len(preset["config"]["question"]) <= 160  # short: the small default model reads it
    assert not any(p["lesson"] for p in PAPER_PRESETS.values())


@pytest.mark.parametrize("name", sorted(LESSONS))
def test_a_classroom_preset_runs_in_the_calls_it_announces_and_grades_a_right_answer(name, script):
    cfg = preset_config(name)
    reference = cfg.reference

    def reply(messages, info):
        return f"I checked it twice.\nFinal answer: {reference}"

    model, played = script(reply)
    events = list(DebateEngine(scripted(cfg, model)).run())
    assert [e.status for e in events if isinstance(e, DebateFinished)] == ["finished"]
    fewest, most = plan_calls(cfg.to_dict()).range(cfg.rounds)
    assert fewest <= len(played.history) <= most and len(played.history) == fewest
    [decision] = [e for e in events if isinstance(e, DecisionReached)]
    kind = DebateAnswerType.of(cfg.to_dict())
    assert is_correct(kind.kind, decision.answer, reference, **kind.keywords)
    # must not happen: a plainly wrong answer graded right
    wrong = {"number": "0.10", "choice": "A"}[kind.kind]
    assert is_correct(kind.kind, f"Final answer: {wrong}", reference, **kind.keywords) is False


def test_presets_are_parsed_once_and_again_when_a_file_changes(tmp_path, monkeypatch):
    """The Debate page asks for the presets on every full run: the files are parsed once, again only
    when one is added, removed or changed; a caller changing what it got changes nothing for the next."""
    import os

    import mad_core.presets as presets

    parsed: list[str] = []
    real = presets.read_config_data
    monkeypatch.setattr(presets, "read_config_data", lambda path: parsed.append(path.name) or real(path))
    first = tmp_path / "a.yaml"
    first.write_text("title: First\nquestion: What is 2 + 2?\nrounds: 2\n", encoding="utf-8")
    assert load_presets(tmp_path)["a"]["title"] == "First" and parsed == ["a.yaml"]
    got = load_presets(tmp_path)
    got["a"]["config"]["rounds"] = 99  # the caller's own copy
    assert load_presets(tmp_path)["a"]["config"]["rounds"] == 2 and parsed == ["a.yaml"]  # not parsed again
    first.write_text("title: First, edited\nquestion: What is 2 + 2?\nrounds: 3\n", encoding="utf-8")
    os.utime(first, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns + 1_000_000_000))
    assert load_presets(tmp_path)["a"]["title"] == "First, edited" and parsed == ["a.yaml", "a.yaml"]
    (tmp_path / "b.yaml").write_text("title: Second\nquestion: Why?\n", encoding="utf-8")
    assert list(load_presets(tmp_path)) == ["a", "b"]
    (tmp_path / "b.yaml").unlink()
    assert list(load_presets(tmp_path)) == ["a"]
