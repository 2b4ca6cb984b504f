"""A debate's metric report: the pure metrics of this package applied to one stored debate.

What it is for: `debate_report(store, debate_id, embed=None)` gives one JSON-serialisable dict
per debate, cached in the database (table `metric_reports`, migration m003), that the
transcript view, the exports and the experiment tables read:

  * ``summary``: decided, answer, correct, accuracy_strict / accuracy_smooth of the final
    decision, accuracy_auc_strict / accuracy_auc_smooth and agreement_all_auc /
    agreement_majority_auc over rounds (seed 001 App. B), answer_similarity of the last
    discussion round (seed 000 Table 1), rounds_to_decision (seed 000 Table 2), calls,
    tokens, latency and estimated cost;
  * ``rounds``: per discussion round (round 0 = All-Agents-Drafting drafts) the answers as
    read (an agent's last readable one of the round, its final-answer extraction of a decision
    round included), ``readable`` of ``agents`` answers, entropy over the readable answers
    (None when there is none: "nobody answered" is never 0 bits) and log-likelihood (seed 003
    appendix), agreement all / majority (seed 001 App. B: every agent counts, an unreadable
    answer agrees with nobody) and disagreement (seed 002 §1, over readable answers; None below
    two), accuracy of the round's clear-majority prediction (at least half of all agents, the
    initial-state rule), all four None in a round with no readable answer (drawn as a gap) and
    counted 0 in their AUCs, which average over every round as App. B's formula does, path
    consistency (seed 003 Eq. 2), answer_similarity (SBERT over the final
    answers, seed 000 Table 1) and reply_similarity (SBERT over whole replies, reasoning
    included: a second, differently named measure);
  * ``agents``: per agent its model, calls, tokens, latency, estimated cost, mean path
    consistency, initial and final state and its answer changes (seed 001 §6.2), each with what
    the agent heard last before it (``before``): a moderator message its prompt carried, else the
    latest reply it was shown (its prompt, stored per turn, is the evidence); never a reply of
    its own step (simultaneous talk, the drafts of AAD), whatever order the calls finished in;
  * ``transitions``: {initial state: {final state: count}} (seed 001 §6.2, Figure 5): per agent
    (per agent and player for "kks") from its first round to its last; in a debate whose rounds
    each discuss one player (the per-player KKS mode's `round_topics`), per player round as the
    paper counts them: the state before that player's round, right or wrong after it;
  * ``judge`` (judge protocols: the side the judge supported and whether that side's model is
    of the judge's family, seed 002 Table 6) and ``self_bleu_diversity`` (two_sided debates:
    100 - Self-BLEU of the two sides' final answers, seed 002 §4.1);
  * ``challenge`` (debates with a challenge step, seed 000 §5): its setting, who challenged,
    whether the decision changed and whether the new answer scores higher or lower (`_challenge`);
  * ``version`` (`VERSION`), ``answer_type``, ``embedder`` and the per-round answer reading.

`compute_report(view, embed=..., rounds=...)` does the work on a `DebateView` (the same fold
the app draws), so the live page reports the complete rounds of a running debate the same way.

Reading answers: every discussion reply is read with the debate's `answer_type` and
`answer_options` (`mad_core.tasks.answer_types.read_answer`): "B", "(B) Paris" and "b." are
one choice, numbers compare by value, a Knight-Knave-Spy assignment is one answer as a whole
(entropy, agreement) and per player for smooth accuracy and agreement shares. An answer the
reader cannot read is "no answer" for every metric (see each metric's docstring). An answer
that `is_correct` accepts against the reference counts as the reference's own answer (so the
documented number tolerances, "0.33" for 1/3, hold for every metric). For free text
(`answer_type` "text") answers are grouped by embedding clusters (`TEXT_CLUSTER_THRESHOLD`).

Caching: the report is stored with a stamp of the debate's state (status, updated_at,
finished_at), the report `VERSION` and the embedder's name, and recomputed when any of them
changed; embeddings are stored by SHA-256 of the text and the embedder's name (table
`embeddings`), read before embedding and written after.

What it must not do: run inside a debate's model-calling path (it is computed on demand:
when a page shows it, on export, by the experiment runner), call a model (the only model is
the SBERT embedder), raise on an odd debate (a failed, empty or stopped debate gives a report
whose numbers are None), or import streamlit.
"""
from __future__ import annotations

import array
import hashlib
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..answers import decided_answer, extracted_answer, final_answer
from ..challenge import PLANTED, challenge_setting, challenged_answer
from ..events import DISCUSSION_KINDS, PERSON
from ..tasks.answer_types import KINDS, DebateAnswerType, is_correct, read_answer, shown_value
from ..view import DebateView
from . import cache
from .answers import disagreement, entropy, log_likelihood, path_consistency
from .decisions import judge_side_agreement, model_family
from .outcomes import accuracy_smooth, accuracy_strict, outcome_metrics
from .process import CORRECT, WRONG, answer_changes, initial_state, initial_states_by_player, transitions
from .similarity import Embedder, _cosine, _package, answer_similarity, self_bleu_diversity

VERSION = 5  # 2: numbers read strictly, extraction answers, None for unreadable rounds; 3: per-round "keys",
# final-answer similarity over the extracted answers (was over the JSON's last line, "}"); 4: "challenge";
# 5: unreadable rounds count 0 in every AUC (accuracy and agreement alike), clear-majority prediction
DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
# Free-text answers whose SBERT cosine similarity reaches this are one answer. Measured with the
# bundled all-MiniLM-L6-v2 on 15 paraphrase pairs ("Paris" / "paris, France", "Albert Einstein" /
# "Einstein", "Jupiter" / "the planet Jupiter": 0.43-0.99) and 16 pairs of different answers
# ("Paris" / "Lyon" 0.50, "It increases" / "It decreases" 0.78, "The Pacific Ocean" / "The
# Atlantic Ocean" 0.75, "100 degrees Celsius" / "0 degrees Celsius" 0.74): at 0.80 no pair of
# different answers is merged and 7 of the 15 paraphrases are. Merging different answers would
# invent agreement, so the threshold sits above every different pair measured.
TEXT_CLUSTER_THRESHOLD = 0.80
SHORT_CHARS = 160  # characters of quoted text in `changes`
# Providers that run on this machine or one of ours: their calls cost nothing.
FREE_PROVIDERS = frozenset({"local", "scripted", "hf", "callable", "ollama", "ollama_chat", "hosted_vllm",
                            "llamafile", "lm_studio"})


# ----- embeddings: cached by text hash -------------------------------------------------------------
def embedder_name(embed: Embedder | None) -> str:
    """The name embeddings are cached under: the bundled model's, or the function's own."""
    if embed is None:
        return DEFAULT_EMBEDDER
    name = getattr(embed, "model_name", None)
    if isinstance(name, str) and name:
        return name
    return f"{getattr(embed, '__module__', '')}.{getattr(embed, '__qualname__', type(embed).__name__)}"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class MemoEmbedder:
    """An embedder that embeds each distinct text once (per object), optionally backed by a Store.

    `calls` counts calls of the wrapped embedder (tests check that a cached text is not embedded
    again). Without a store it is an in-memory memo only."""

    def __init__(self, embed: Embedder | None = None, store: Any = None):
        self.embed = embed
        self.name = embedder_name(embed)
        self.store = store
        self.vectors: dict[str, list[float]] = {}
        self.calls = 0

    def __call__(self, texts: list[str]) -> list[list[float]]:
        texts = [str(t) for t in texts]
        wanted = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if wanted and self.store is not None:
            hashes = {text_hash(t): t for t in wanted}
            for digest, blob in cache.cached_embeddings(self.store, self.name, list(hashes)).items():
                vector = array.array("f")
                vector.frombytes(blob)
                self.vectors[hashes[digest]] = vector.tolist()
            wanted = [t for t in wanted if t not in self.vectors]
        if wanted:
            self.calls += 1
            made = list((self.embed or _package().default_embed)(wanted))
            fresh = {t: [float(x) for x in v] for t, v in zip(wanted, made)}
            self.vectors.update(fresh)
            if self.store is not None:
                cache.save_embeddings(self.store, self.name, {text_hash(t): array.array("f", v).tobytes()
                                                             for t, v in fresh.items()})
        return [self.vectors[t] for t in texts]


# ----- reading answers ----------------------------------------------------------------------------
def _display(kind: str, value: Any, source: str) -> str:
    """How a read answer is shown: as every display shows it (`answer_types.shown_value`; a free-text
    answer at most SHORT_CHARS characters in the report)."""
    shown = shown_value(kind, value, source)
    return shown[:SHORT_CHARS] if kind == "text" else shown


class AnswerReader:
    """Reads one debate's answers into comparable keys ("k0", "k1", ...), the truth included.

    `read(text)` -> (key or None, display text or None, parts: {player: role} for "kks" else
    None). Keys are the same for the same answer within one reader; an answer `is_correct`
    accepts against the reference gets the reference's key. For "text", `cluster(texts)` must
    be called first with every text the debate will read (it groups them by embedding)."""

    def __init__(self, kind: str, options: Sequence[str] | None, reference: str | None,
                 embed: Callable[[list[str]], Sequence[Sequence[float]]] | None = None):
        self.kind = kind if kind in KINDS else "text"
        self.options = list(options) if options else None
        self.reference = reference if isinstance(reference, str) and reference.strip() else None
        self.embed = embed
        self._keys: dict[Any, str] = {}
        self._clusters: dict[str, Any] = {}  # "text": normalised text -> its cluster's value
        self.truth_value: Any = None
        self.truth_display: str | None = None
        self.truth_parts: dict[str, str] | None = None
        if self.reference is not None:
            reading = self._reading(self.reference)
            if reading.valid:
                self.truth_value = reading.value
                self.truth_display = _display(self.kind, reading.value, reading.source)
                if self.kind == "kks":
                    self.truth_parts = dict(reading.value)

    def _reading(self, text: str):
        return read_answer(self.kind, text, choices=self.options if self.kind == "choice" else None,
                           names=self.options if self.kind == "kks" else None)

    @property
    def truth_key(self) -> str | None:
        return None if self.truth_value is None else self._key(self.truth_value)

    def _key(self, value: Any) -> str:
        if self.kind == "text":
            value = self._clusters.get(value, value)
        if value not in self._keys:
            self._keys[value] = f"k{len(self._keys)}"
        return self._keys[value]

    def cluster(self, texts: Sequence[str]) -> None:
        """Group free-text answers: equal after SQuAD normalisation, or SBERT cosine similarity
        at least TEXT_CLUSTER_THRESHOLD with a cluster's first answer (the reference's cluster
        first, then in order of appearance: deterministic, no answer joins two clusters)."""
        if self.kind != "text" or self.embed is None:
            return
        sources: dict[str, str] = {}  # normalised value -> the first text it was read from
        if self.truth_value is not None:
            sources[self.truth_value] = self.reference or ""
        for text in texts:
            reading = self._reading(text)
            if reading.valid and reading.value not in sources:
                sources[reading.value] = reading.source or str(reading.value)
        values = list(sources)
        if len(values) < 2:
            return
        vectors = dict(zip(values, self.embed([sources[v] for v in values])))
        leaders: list[Any] = []
        for value in values:
            leader = next((lead for lead in leaders
                           if _cosine(vectors[value], vectors[lead]) >= TEXT_CLUSTER_THRESHOLD), None)
            if leader is None:
                leaders.append(value)
            else:
                self._clusters[value] = leader

    def read(self, text: str | None) -> tuple[str | None, str | None, dict[str, str] | None]:
        if not text:
            return None, None, None
        reading = self._reading(text)
        if not reading.valid:
            return None, None, None
        display = _display(self.kind, reading.value, reading.source)
        parts = dict(reading.value) if self.kind == "kks" and isinstance(reading.value, Mapping) else None
        if self.truth_value is not None and self.kind != "text" and reading.value != self.truth_value:
            if is_correct(self.kind, text, self.reference, choices=self.options if self.kind == "choice" else None,
                          names=self.options if self.kind == "kks" else None):
                return self.truth_key, display, parts
        return self._key(reading.value), display, parts


# ----- cost ---------------------------------------------------------------------------------------
def estimated_cost(model: str | None, prompt_tokens: int, completion_tokens: int) -> float | None:
    """US dollars by litellm's local price map; 0.0 for models that run here (local, scripted, hf,
    a callable, an Ollama or vLLM server) and for a person's seat; None when the map does not know the model. Never a
    network call (the map is litellm's bundled copy when LITELLM_LOCAL_MODEL_COST_MAP is set)."""
    name = str(model or "")
    provider = name.split("/", 1)[0] if "/" in name else ""
    if not name or provider in FREE_PROVIDERS or name == PERSON:
        return 0.0
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm

        known = name in litellm.model_cost or name.split("/", 1)[-1] in litellm.model_cost
        if not known:
            return None
        prompt_cost, completion_cost = litellm.cost_per_token(model=name, prompt_tokens=int(prompt_tokens),
                                                              completion_tokens=int(completion_tokens))
        return float(prompt_cost) + float(completion_cost)
    except Exception:  # noqa: BLE001 - a model litellm cannot price is "unknown", never an error
        return None


# ----- the report ---------------------------------------------------------------------------------
def _finite(value: Any) -> float | None:
    """A JSON-safe number: None for None, NaN and the infinities."""
    if value is None or isinstance(value, bool):
        return value
    value = float(value)
    return value if math.isfinite(value) else None


def _short(text: str | None) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= SHORT_CHARS else text[: SHORT_CHARS - 1] + "…"


def _mean(values: Sequence[float | None]) -> float | None:
    numbers = [v for v in values if v is not None]
    return math.fsum(numbers) / len(numbers) if numbers else None  # exactly rounded: the same in any order


def _discussion_turns(view: DebateView, rounds: set[int] | None, kinds: tuple[str, ...] = DISCUSSION_KINDS
                      ) -> dict[int, list]:
    """round -> its discussion turns (or turns of `kinds`; every status), in speaking order, for
    the rounds asked."""
    by_round: dict[int, list] = {}
    for turn in view.turns:
        if turn.kind in kinds and (rounds is None or turn.round in rounds):
            by_round.setdefault(turn.round, []).append(turn)
    return dict(sorted(by_round.items()))


def _answer_text(turn) -> str:
    """The final answer a turn states: an extraction's parsed answer (`{"answer": "1.01"}` ->
    "1.01", its lead-in dropped; never its last line, which is the JSON's "}"), a discussion
    turn's `answer`, else its last answer line. The final-answer similarity (seed 000 Table 1)
    is over these."""
    if turn.status != "ok":
        return ""
    if turn.kind == "extraction":
        return extracted_answer(turn.text)
    return (turn.answer or final_answer(turn.text) or "").strip()


def empty_report(view: DebateView | None = None, answer_type: str = "text") -> dict[str, Any]:
    """The report of a debate with nothing to measure: every number None."""
    summary = {key: None for key in (
        "answer", "correct", "accuracy_strict", "accuracy_smooth", "accuracy_auc_strict", "accuracy_auc_smooth",
        "agreement_all_auc", "agreement_majority_auc", "answer_similarity", "rounds_to_decision")}
    summary.update(decided=False, calls=0, prompt_tokens=0, completion_tokens=0, latency_s=0.0, cost_usd=0.0)
    return {"version": VERSION, "status": getattr(view, "status", None),
            "answer_type": answer_type, "reference": None, "embedder": None, "summary": summary, "rounds": [],
            "agents": {}, "transitions": {}, "judge": None, "self_bleu_diversity": None, "challenge": None,
            "problems": []}


def compute_report(view: DebateView, *, embed: Embedder | None = None, rounds: set[int] | None = None,
                   embedder: str | None = None) -> dict[str, Any]:
    """The report of the debate `view` holds; `rounds` limits it to those discussion rounds (a
    running debate's complete rounds). `embed` embeds texts (None: the bundled SBERT model);
    pass a `MemoEmbedder` to share its cache. Never raises: a failure inside gives the empty
    report with the reason under "problems"."""
    config = view.config or {}
    kind = DebateAnswerType.of(config).kind
    try:
        return _compute(view, config, kind, embed if embed is not None else MemoEmbedder(None), rounds, embedder)
    except Exception as exc:  # noqa: BLE001 - a report must never take a page or an export down
        report = empty_report(view, kind)
        report["problems"].append(f"the metrics could not be computed: {type(exc).__name__}: {_short(str(exc))}")
        return report


def _compute(view: DebateView, config: dict, kind: str, embed: Embedder, only: set[int] | None,
             embedder: str | None) -> dict[str, Any]:
    report = empty_report(view, kind)
    report["embedder"] = embedder or embedder_name(getattr(embed, "embed", embed))
    reader = AnswerReader(kind, DebateAnswerType.of(config).options, config.get("reference"), embed)
    report["reference"] = reader.truth_display
    if reader.reference is not None and reader.truth_value is None:
        report["problems"].append(f"the reference cannot be read as answer type {kind!r}")
    by_round = _discussion_turns(view, only)
    if isinstance(embed, MemoEmbedder):  # one batch for every text the similarities need
        said = [text for turns in by_round.values() for t in turns if t.status == "ok"
                for text in (_answer_text(t), t.text) if text]
        if said:
            embed(said)
    reader.cluster([t.text for turns in by_round.values() for t in turns if t.status == "ok"])
    truth_key = reader.truth_key
    truth = reader.truth_parts if kind == "kks" else truth_key

    keys: list[dict[str, str | None]] = []  # per round: agent -> key
    parts_by_round: list[dict[str, Any]] = []  # per round: agent -> {player: role} (kks) or key
    chosen: list[dict[str, Any]] = []  # per round: agent -> its last discussion turn (what it said)
    extracted = _discussion_turns(view, only, ("extraction",))
    for number, turns in by_round.items():
        answers, finals, keyed, parts, picked, replies_of = {}, {}, {}, {}, {}, {}
        for turn in turns + extracted.get(number, []):
            # An agent's answer in a round is its last readable one (several turns a round: the
            # KKS mode's debate replies name one player's role, its self-adjustment all of them;
            # the final-answer extraction of a decision round, seed 000 E.1, comes last: the
            # solution the vote chart shows for that agent).
            key, display, player_roles = reader.read(turn.text if turn.status == "ok" else None)
            if key is not None or keyed.get(turn.agent) is None:
                answers[turn.agent], keyed[turn.agent] = display, key
                parts[turn.agent] = player_roles if kind == "kks" else key
                finals[turn.agent] = _answer_text(turn)
            if turn.kind != "extraction":
                picked[turn.agent] = turn
                if turn.status == "ok" and turn.text:
                    replies_of[turn.agent] = turn.text
        values = list(keyed.values())
        readable = sum(1 for v in values if v is not None)
        share = None
        if truth_key is not None and values:
            share = sum(1 for v in values if v == truth_key) / len(values)
        said = [text for text in finals.values() if text]
        replies = list(replies_of.values())
        consistency = dict(zip(keyed, path_consistency(values)))
        report["rounds"].append({
            "round": number, "answers": answers, "keys": dict(keyed), "readable": readable, "agents": len(values),
            # Over the readable answers only; a round without one has no spread (None, never 0
            # bits: "nobody answered" is not "everybody agrees"), one alone has no pair to differ.
            "entropy": entropy(values) if readable else None,
            "log_likelihood": _finite(log_likelihood(values, truth_key)) if truth_key is not None else None,
            "correct_share": share,
            "disagreement": disagreement(values) if readable >= 2 else None,
            "path_consistency": consistency,
            "answer_similarity": _finite(answer_similarity(said, embed=embed)),
            "reply_similarity": _finite(answer_similarity(replies, embed=embed)),
        })
        keys.append(keyed)
        parts_by_round.append(parts)
        chosen.append(picked)
    outcome = outcome_metrics([list(p.values()) for p in parts_by_round], truth)
    for i, row in enumerate(report["rounds"]):
        # Seed 001 App. B counts every agent (an unreadable answer agrees with nobody, so 1 readable
        # of 3 is no unanimity) and averages its curves over EVERY round: one rule for accuracy and
        # agreement alike. A round with no readable answer scores 0 in all four AUCs (outcome_metrics:
        # no majority, no agreement), and is drawn as a gap with "0 of n readable" (its row's None).
        heard = bool(row["readable"])
        row.update({name: outcome[key][i] if heard else None for name, key in
                    (("agree_all", "agree_all"), ("agree_majority", "agree_major"),
                     ("accuracy_strict", "strict"), ("accuracy_smooth", "smooth"))})
    _summary(report, view, reader, outcome, truth)
    _agents(report, view, keys, parts_by_round, (by_round, chosen), truth)
    _judge(report, view, config)
    _challenge(report, view, reader, truth)
    return report


def _summary(report: dict, view: DebateView, reader: AnswerReader, outcome: dict, truth: Any) -> None:
    summary = report["summary"]
    decision = view.decision
    if decision is not None:
        answer = decided_answer(decision.answer, decision.details)
        summary.update(decided=True, answer=answer or None, rounds_to_decision=decision.round)
        key, _, parts = reader.read(decision.answer)
        if key is None and answer:
            key, _, parts = reader.read(answer)
        if truth is not None:
            predicted = parts if reader.kind == "kks" else key
            summary["accuracy_strict"] = accuracy_strict(predicted, truth)
            summary["accuracy_smooth"] = accuracy_smooth(predicted, truth)
            summary["correct"] = summary["accuracy_strict"] == 1.0
    summary.update(accuracy_auc_strict=outcome["auc_strict"], accuracy_auc_smooth=outcome["auc_smooth"],
                   agreement_all_auc=outcome["auc_agree_all"], agreement_majority_auc=outcome["auc_agree_major"])
    if report["rounds"]:
        summary["answer_similarity"] = report["rounds"][-1]["answer_similarity"]


def _agents(report: dict, view: DebateView, keys: list[dict], parts_by_round: list[dict],
            turns: tuple[dict, list[dict]], truth: Any) -> None:
    models = {a.get("label"): a.get("model") for a in (view.config or {}).get("agents", []) if isinstance(a, dict)}
    agents: dict[str, dict[str, Any]] = {}
    for turn in view.turns:
        row = agents.setdefault(turn.agent, {"model": models.get(turn.agent) or turn.model, "calls": 0,
                                             "prompt_tokens": 0, "completion_tokens": 0, "latency_s": 0.0,
                                             "cost_usd": 0.0})
        row["calls"] += 1
        row["prompt_tokens"] += int(turn.prompt_tokens or 0)
        row["completion_tokens"] += int(turn.completion_tokens or 0)
        row["latency_s"] += float(turn.latency_s or 0.0)
        cost = estimated_cost(turn.model, turn.prompt_tokens or 0, turn.completion_tokens or 0)
        row["cost_usd"] = None if cost is None or row["cost_usd"] is None else row["cost_usd"] + cost
    kks = report["answer_type"] == "kks"
    first, last = (parts_by_round[0], parts_by_round[-1]) if parts_by_round else ({}, {})
    initial_all = initial_states_by_player(first, truth) if kks and isinstance(truth, Mapping) else {}
    displays = [r["answers"] for r in report["rounds"]]
    changes = _changes(keys, displays, *turns, view)
    final: dict[str, Any] = {}
    initial: dict[str, Any] = {}
    for label in list(dict.fromkeys([*models, *(k for r in keys for k in r)])):
        row = agents.setdefault(label, {"model": models.get(label), "calls": 0, "prompt_tokens": 0,
                                        "completion_tokens": 0, "latency_s": 0.0, "cost_usd": 0.0})
        row["path_consistency"] = _mean([r["path_consistency"].get(label) for r in report["rounds"]])
        row["initial_state"] = row["final_state"] = None
        if truth is not None and label in first:
            if kks:
                initial[label] = initial_all.get(label)
                mine = last.get(label) if isinstance(last.get(label), Mapping) else {}
                final[label] = {player: CORRECT if mine.get(player) == role else WRONG
                                for player, role in truth.items()} if label in last else None
            else:
                initial[label] = initial_state(first[label], list(first.values()), truth)
                final[label] = (CORRECT if last.get(label) == truth else WRONG) if label in last else None
            row["initial_state"], row["final_state"] = initial[label], final[label]
        row["changes"] = [c for c in changes if c["agent"] == label]
    for row in agents.values():
        row.setdefault("path_consistency", None)
        row.setdefault("initial_state", None)
        row.setdefault("final_state", None)
        row.setdefault("changes", [])
    report["agents"] = agents
    counted = transitions({k: v for k, v in initial.items() if v is not None},
                          {k: v for k, v in final.items() if v is not None})
    if kks and isinstance(truth, Mapping):
        counted = _player_round_transitions(view, list(turns[0]), parts_by_round, truth) or counted
    nested: dict[str, dict[str, int]] = {}
    for (start, end), count in sorted(counted.items()):
        nested.setdefault(start, {})[end] = count
    report["transitions"] = nested
    summary = report["summary"]
    summary["calls"] = sum(r["calls"] for r in agents.values())
    summary["prompt_tokens"] = sum(r["prompt_tokens"] for r in agents.values())
    summary["completion_tokens"] = sum(r["completion_tokens"] for r in agents.values())
    summary["latency_s"] = sum(r["latency_s"] for r in agents.values())
    costs = [r["cost_usd"] for r in agents.values()]
    summary["cost_usd"] = None if any(c is None for c in costs) else sum(costs)


def _player_round_transitions(view: DebateView, numbers: list[int], parts_by_round: list[dict],
                              truth: Mapping) -> dict[tuple, int]:
    """Seed 001 §6.2 in its own granularity, for debates that discuss one player a round (the
    per-player KKS mode, `round_topics`): each agent's state on that player before the round
    (from the round before) and whether its answer for the player is right after it. {} when no
    round is about a player."""
    topics = view.round_topics()
    counts: dict[tuple, int] = {}
    for i, number in enumerate(numbers):
        player = topics.get(number)
        if i == 0 or player not in truth:
            continue
        before = {agent: (a.get(player) if isinstance(a, Mapping) else None)
                  for agent, a in parts_by_round[i - 1].items()}
        after = parts_by_round[i]
        for agent, role in before.items():
            start = initial_state(role, list(before.values()), truth[player])
            mine = after.get(agent) if isinstance(after.get(agent), Mapping) else {}
            end = CORRECT if mine.get(player) == truth[player] else WRONG
            counts[(start, end)] = counts.get((start, end), 0) + 1
    return counts


def _changes(keys: list[dict], displays: list[dict], by_round: dict, chosen: list[dict],
             view: DebateView) -> list[dict[str, Any]]:
    """Who changed their answer when (seed 001 §6.2), with what was said just before the change
    as the changing agent saw it (`_heard_before`)."""
    numbers = list(by_round)
    steps = _step_of(view)
    out = []
    for change in answer_changes(keys):
        rnd = numbers[change["round"]]
        agent = change["agent"]
        earlier = next((i for i in range(change["round"] - 1, -1, -1) if keys[i].get(agent) == change["from"]), None)
        turn = chosen[change["round"]].get(agent)
        before = _heard_before(view, turn, steps) if turn is not None else None
        was = displays[earlier].get(agent) if earlier is not None else None
        now = displays[change["round"]].get(agent)
        out.append({
            "agent": agent, "round": rnd, "from": was, "to": now, "before": before,
            "short": f"{agent} changed from {_short(was)} to {_short(now)} in round {rnd}"
                     + (f", after {before['agent']} said: {before['text']}" if before is not None else ""),
        })
    return out


SEEN_KINDS = (*DISCUSSION_KINDS, "summary")  # turns an agent may be shown (discussion.SEEN_KINDS)
_MODERATOR_SAYS = "A human moderator says to you: "  # prompts.moderator_block's words
_SNIPPET_CHARS = 80


def _step_of(view: DebateView) -> Callable[[int, str], int | None]:
    """(round, agent) -> the step of its round the agent speaks in (agents of one step speak at
    the same time and never see each other's replies of that round), or None when unknown. From
    the step plan recorded with each round (`RoundStarted.steps`: simultaneous,
    simultaneous_summarizer, collective_refinement: one step; report: the moderator, then the
    members together; AAD drafts: one step); unknown for rounds a paradigm plans itself."""
    plans = {rnd: {agent: i for i, group in enumerate(groups) for agent in group}
             for rnd, groups in view.round_steps.items()}

    def step(rnd: int, agent: str) -> int | None:
        return plans.get(rnd, {}).get(agent)
    return step


def _folded(text: str) -> str:
    return " ".join(str(text or "").split())


def _shown_as(turn) -> str:
    """How a reply opens in another agent's prompt: its author's label and the start of its first
    line (generators.label_turn; a generator may cut the final-answer or confidence line, never
    the opening)."""
    first = next((line for line in str(turn.text or "").splitlines() if line.strip()), "")
    return _folded(f"[{turn.agent}]: {first.strip()}")[:_SNIPPET_CHARS]


def _heard_before(view: DebateView, turn, step_of: Callable[[int, str], int | None]) -> dict[str, Any] | None:
    """What `turn`'s agent heard last before it spoke: a moderator message its prompt carried, else
    the latest reply of another agent (or a summary) that it could have seen and that its prompt
    shows. Could have seen: an earlier round, or an earlier step of its own round; never a reply
    of the same step (simultaneous talk, the drafts of AAD: written at the same time, whatever
    order the calls finished in). Shown: the reply's opening words are in the prompt (a turn
    stored without its prompt is taken as seen)."""
    prompt = _folded("\n".join(str(m.get("content") or "") for m in (turn.prompt or []) if isinstance(m, Mapping)))
    # The moderator's messages come last in a prompt (prompts.turn_prompt); one a reply merely
    # quotes is no message the agent received, so only the debate's own steering messages count.
    told = [(prompt.rfind(_MODERATOR_SAYS + _folded(m.message)), m.message) for m in view.steering
            if getattr(m, "message", None) and _folded(m.message)]
    told = [(at, message) for at, message in told if at >= 0]
    if told:
        return {"agent": "moderator", "round": turn.round, "text": _short(max(told, key=lambda t: t[0])[1])}
    mine = step_of(turn.round, turn.agent)
    candidates = []
    for other in view.turns:
        if other is turn or other.agent == turn.agent or other.kind not in SEEN_KINDS or other.status != "ok":
            continue
        if not other.text or other.seq is None or turn.seq is None:
            continue
        if other.round > turn.round:
            continue
        if other.round == turn.round:
            theirs = step_of(other.round, other.agent)
            simultaneous = turn.kind == "draft" or (mine is not None and theirs is not None and theirs >= mine)
            if simultaneous or other.seq >= turn.seq or other.kind == "summary":
                continue
        candidates.append(other)
    if prompt:
        candidates = [c for c in candidates if _shown_as(c) in prompt]
    if not candidates:
        return None
    before = max(candidates, key=lambda t: (t.round, t.seq))
    return {"agent": before.agent, "round": before.round, "text": _short(before.text)}


def _judge(report: dict, view: DebateView, config: dict) -> None:
    """Seed 002 Table 6 for one debate: the judge's side and its model family; and §4.1's diversity."""
    agents = [a for a in config.get("agents", []) if isinstance(a, dict)]
    decision = view.decision
    details = (decision.details or {}) if decision is not None else {}
    if decision is not None and decision.winner_agent == "judge" and config.get("judge_model") and len(agents) == 2:
        side = details.get("side")
        record = {"side": side, "affirmative": agents[0].get("model"), "negative": agents[1].get("model"),
                  "judge": config.get("judge_model")}
        row = judge_side_agreement([record])["rows"][0]
        report["judge"] = {
            "side": side if side in ("affirmative", "negative") else None, "side_agent": details.get("side_agent"),
            "judge_model": record["judge"], "judge_family": model_family(record["judge"]),
            "same_family_side": row["same_family_side"],
            "supports_own_family": None if row["same_family_side"] is None else side == row["same_family_side"],
        }
    if config.get("paradigm") == "two_sided" and report["rounds"] and len(agents) == 2:
        # Seed 002 §4.1 compares the two candidates' answers: the sides' last stated answers.
        last: dict[str, str] = {}
        for turn in view.turns:
            if turn.kind in DISCUSSION_KINDS and turn.status == "ok" and _answer_text(turn):
                last[turn.agent] = _answer_text(turn)
        texts = [last[a.get("label")] for a in agents if a.get("label") in last]
        report["self_bleu_diversity"] = _finite(self_bleu_diversity(texts)) if len(texts) == 2 else None


def _challenge(report: dict, view: DebateView, reader: AnswerReader, truth: Any) -> None:
    """Seed 000 §5 (Figures 6 and 7) for one debate with a challenge step (mad_core/challenge.py).

    As MALLM's evaluator counts them (analyze_challenged_answers): the debate's answer is
    ``challenged`` when the first agent challenged it and gave a new answer; the new answer is
    scored against the reference like the answer it challenged (the decision, or the planted one of
    the baselines), and ``improved`` / ``worsened`` say whether its score is higher / lower (Figure 7:
    the share of challenged answers that improve). ``agent_challenge_rate``: the share of all
    asked agents that challenged (Figure 6 counts agents). ``changed``: the decision was replaced.
    The summary's ``challenged``, ``challenge_changed``, ``challenge_improved`` and
    ``challenge_worsened`` (1.0 / 0.0; None where they do not apply) are what experiments average."""
    summary = report["summary"]
    summary.update(challenged=None, challenge_changed=None, challenge_improved=None, challenge_worsened=None)
    config = view.config or {}
    setting = challenge_setting(config.get("challenge"))
    stances = {c.agent: c for c in view.challenges}
    if setting is None or not stances or view.decision is None:
        return
    labels = [a.get("label") for a in config.get("agents", []) if isinstance(a, dict)]
    decider = labels[0] if labels else next(iter(stances))
    change = view.challenge_change
    original = change["original_answer"] if change else decided_answer(view.decision.answer, view.decision.details)
    prepared = next((t.text for t in view.turns if t.kind == "challenge" and t.agent == decider), "")
    put = challenged_answer(setting, original, prepared if setting == "wrong" else "")
    first = stances.get(decider)
    challenged = first is not None and first.agrees is False and bool(first.new_answer)
    before = after = None
    if challenged and truth is not None:
        before, after = (_answer_score(reader, text, truth) for text in (put, first.new_answer))
    scored = before is not None and after is not None
    challengers = sum(1 for c in stances.values() if c.agrees is False)
    report["challenge"] = {
        "setting": setting, "planted": setting in PLANTED, "asked": len(stances), "challengers": challengers,
        "agent_challenge_rate": challengers / len(stances), "decider": decider, "challenged": challenged,
        "challenged_answer": _short(put), "new_answer": _short(first.new_answer) if challenged else None,
        "changed": change is not None, "original_answer": _short(original),
        "final_answer": _short(decided_answer(view.decision.answer, view.decision.details)),
        "score_before": before, "score_after": after,
        "improved": after > before if scored else None, "worsened": after < before if scored else None,
    }
    summary.update(challenged=float(challenged), challenge_changed=float(change is not None),
                   challenge_improved=float(after > before) if scored else None,
                   challenge_worsened=float(after < before) if scored else None)


def _answer_score(reader: AnswerReader, text: str | None, truth: Any) -> float | None:
    """An answer's score against the truth (smooth accuracy: 1/0 for one value, the share of the
    players right for "kks"; MALLM's evaluator prefers F1 over exact correctness the same way)."""
    key, _, parts = reader.read(text)
    return accuracy_smooth(parts if reader.kind == "kks" else key, truth)


# ----- the cached report of a stored debate -------------------------------------------------------
def report_stamp(debate: Mapping[str, Any], embedder: str) -> str:
    """What a cached report must have been computed for: the debate's state, VERSION, the embedder."""
    return f"v{VERSION}|{debate.get('status')}|{debate.get('updated_at')!r}|{debate.get('finished_at')!r}|{embedder}"


def debate_report(store, debate_id: str, *, embed: Embedder | None = None) -> dict[str, Any]:
    """The metric report of a stored debate, from the database's cache when the debate has not
    changed since; computed (and cached, with its embeddings) otherwise. Never raises for an odd
    debate; LookupError for an id the store does not hold."""
    debate = store.get_debate(debate_id)
    if debate is None:
        raise LookupError(f"no debate with id {debate_id!r}")
    name = embedder_name(embed)
    stamp = report_stamp(debate, name)
    cached = cache.cached_report(store, debate_id, stamp)
    if cached is not None:
        return cached
    memo = MemoEmbedder(embed, store)
    try:
        view = DebateView.from_store(store, debate_id)
    except Exception as exc:  # noqa: BLE001 - rows this version cannot fold
        report = empty_report(None, "text")
        report["problems"].append(f"the debate could not be read: {type(exc).__name__}")
        return report
    # A running debate's last round may be incomplete: it is measured once it is over.
    rounds = complete_rounds(view) if view.status == "running" else None
    report = compute_report(view, embed=memo, embedder=name, rounds=rounds)
    cache.save_report(store, debate_id, stamp, report)
    return report


def complete_rounds(view: DebateView) -> set[int]:
    """Discussion rounds that are over: a later round began, the decision step began, or the debate ended."""
    rounds = {t.round for t in view.turns if t.kind in DISCUSSION_KINDS}
    if view.status != "running":
        return rounds
    last = max(rounds, default=-1)
    done = {r for r in rounds if r < last}
    after = any(t.round == last and t.kind not in DISCUSSION_KINDS + ("persona",) for t in view.turns)
    if after or any(a.round == last for a in view.attempts):
        done.add(last)
    streaming = {t.round for t in view.turns if t.status == "streaming" and t.kind in DISCUSSION_KINDS}
    return done - streaming


__all__ = ["VERSION", "TEXT_CLUSTER_THRESHOLD", "AnswerReader", "MemoEmbedder", "compute_report", "complete_rounds",
           "debate_report", "embedder_name", "empty_report", "estimated_cost", "format_dollars", "format_number",
           "report_stamp", "text_hash"]


# ----- the report in the exports -------------------------------------------------------------------
# Per-round measures that the CSV export adds to each discussion turn's row (prefixed "round_").
ROUND_COLUMNS = ("entropy", "log_likelihood", "agree_all", "agree_majority", "disagreement", "accuracy_strict",
                 "accuracy_smooth", "answer_similarity", "reply_similarity")


def csv_columns(report: Mapping[str, Any], kind: str, rnd: int, agent: str) -> dict[str, Any]:
    """The metric columns of one turn's CSV row: the answer as read (discussion turns) and its
    round's measures; empty values for other turns. Values still go through `csv_safe`."""
    row: dict[str, Any] = {"answer_read": None, **{f"round_{name}": None for name in ROUND_COLUMNS}}
    if kind not in DISCUSSION_KINDS:
        return row
    for entry in report.get("rounds") or []:
        if entry.get("round") == rnd:
            row["answer_read"] = (entry.get("answers") or {}).get(agent)
            row.update({f"round_{name}": entry.get(name) for name in ROUND_COLUMNS})
    return row


def format_number(value: Any) -> str:
    """A metric as people read it: "-" for None, yes/no, 3 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def format_dollars(value: float | None, unknown: str = "-") -> str:
    return unknown if value is None else f"${value:.4f}"


def markdown_lines(report: Mapping[str, Any]) -> list[str]:
    """A short "Metrics" section for the Markdown export. Texts in `report` must already be
    escaped (`store.md_safe`): this adds only our own markup."""
    summary, num = report.get("summary") or {}, format_number
    lines = ["", "## Metrics", "",
             f"- **Answer type:** {report.get('answer_type')} · **correct:** {num(summary.get('correct'))} · "
             f"**accuracy** strict {num(summary.get('accuracy_strict'))}, smooth "
             f"{num(summary.get('accuracy_smooth'))} · **rounds to decision:** "
             f"{num(summary.get('rounds_to_decision'))}",
             f"- **Over rounds (AUC):** accuracy {num(summary.get('accuracy_auc_strict'))} (smooth "
             f"{num(summary.get('accuracy_auc_smooth'))}) · all agree {num(summary.get('agreement_all_auc'))}"
             f" · majority agrees {num(summary.get('agreement_majority_auc'))}",
             f"- **Final-answer similarity (SBERT, last round):** {num(summary.get('answer_similarity'))} · "
             f"**tokens:** {num(summary.get('prompt_tokens'))} + {num(summary.get('completion_tokens'))} · "
             f"**estimated cost:** {format_dollars(summary.get('cost_usd'))}"]
    rounds = report.get("rounds") or []
    if rounds:
        lines += ["", "| round | readable | entropy | all agree | majority agrees | disagreement | accuracy | "
                      "answer similarity | reply similarity |", "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r.get('round')} | {num(r.get('readable'))} of {num(r.get('agents'))} | "
                  f"{num(r.get('entropy'))} | {num(r.get('agree_all'))} | "
                  f"{num(r.get('agree_majority'))} | {num(r.get('disagreement'))} | "
                  f"{num(r.get('accuracy_strict'))} | {num(r.get('answer_similarity'))} | "
                  f"{num(r.get('reply_similarity'))} |" for r in rounds]
    changes = [c for agent in (report.get("agents") or {}).values() for c in agent.get("changes") or []]
    if changes:
        lines += ["", "**Answer changes**", ""] + [f"- {c.get('short')}" for c in changes]
    return lines
