"""Debate metrics: numbers in, numbers out (no UI, no model calls but the SBERT embedder).

Everything is re-exported here, so `from mad_core.metrics import entropy` and
`metrics.entropy` keep working. The submodules, by source:

  * `answers`: one round's answers. `entropy`, `log_likelihood` (seed 003 appendix,
    Eqs. 4-5 and worked examples), `path_consistency`, `madc_order` (seed 003 Eq. 2,
    Algorithm 1), `agreement_all`, `agreement_majority` (seed 001 App. B), `disagreement`,
    `average_disagreement` (seed 002 §1, Degeneration-of-Thought), `agreement`,
    `majority_answer`.
  * `outcomes`: seed 001 App. B over rounds. `accuracy_strict`, `accuracy_smooth`, `auc`,
    `majority_prediction`, `agree_all_share`, `agree_major_share`, `outcome_metrics`.
  * `process`: seed 001 §6.2. `initial_state`, `final_state`, `clear_majority`,
    `initial_states_by_player`, `transitions`, `answer_changes`.
  * `decisions`: `rounds_to_decision_distribution`, `rounds_to_decision_summary` (seed 000
    Table 2), `judge_side_agreement`, `model_family` (seed 002 Table 6).
  * `similarity`: `answer_similarity`, `answer_diversity` (seed 000 Table 1, SBERT),
    `self_bleu`, `self_bleu_diversity` (seed 002 §4.1), `token_overlap`,
    `convergence_winner` (seed 004).
  * `timeline`: `answer_timeline`, `vote_breakdown` (charts).
  * `report` (imported on its own: `from mad_core.metrics.report import debate_report`): all of
    the above applied to one stored debate, answers read with its `answer_type`, cached in the
    database with its SBERT embeddings.

Functions taking "answers" expect extracted answers (see `mad_core.answers.final_answer`);
they compare them after `mad_core.answers.normalize_answer`. They never raise on empty or
odd input (they return the None / 0 their docstrings name), except `madc_order` and
`convergence_winner`, whose callers' bugs they report, and `vote_breakdown`, which counts
with the protocols' own `tally`.

The SBERT model functions (`default_embed`, `_load_default_model`) are looked up here at
call time, so monkeypatching them on `mad_core.metrics` reaches `answer_similarity`.
"""
from __future__ import annotations

from .answers import (
    agreement,
    agreement_all,
    agreement_majority,
    average_disagreement,
    disagreement,
    entropy,
    log_likelihood,
    madc_order,
    majority_answer,
    path_consistency,
)
from .similarity import (
    Embedder,
    _load_default_model,
    answer_diversity,
    answer_similarity,
    convergence_winner,
    default_embed,
    self_bleu,
    self_bleu_diversity,
    token_overlap,
)
from .outcomes import (
    accuracy_smooth,
    accuracy_strict,
    agree_all_share,
    agree_major_share,
    auc,
    majority_prediction,
    outcome_metrics,
)
from .process import (
    CHAOS,
    CHAOS_CORRECT,
    CHAOS_WRONG,
    CORRECT,
    FINAL_STATES,
    INITIAL_STATES,
    MAJORITY_CORRECT,
    MAJORITY_WRONG,
    MINORITY_CORRECT,
    MINORITY_WRONG,
    WRONG,
    answer_changes,
    clear_majority,
    final_state,
    initial_state,
    initial_states_by_player,
    transitions,
)
from .decisions import (
    judge_side_agreement,
    model_family,
    rounds_to_decision_distribution,
    rounds_to_decision_summary,
)
from .timeline import answer_timeline, vote_breakdown

__all__ = [
    # answers
    "agreement", "agreement_all", "agreement_majority", "average_disagreement", "disagreement",
    "entropy", "log_likelihood", "madc_order", "majority_answer", "path_consistency",
    # similarity
    "Embedder", "_load_default_model", "answer_diversity", "answer_similarity", "convergence_winner",
    "default_embed", "self_bleu", "self_bleu_diversity", "token_overlap",
    # outcomes
    "accuracy_smooth", "accuracy_strict", "agree_all_share", "agree_major_share", "auc",
    "majority_prediction", "outcome_metrics",
    # process
    "CHAOS", "CHAOS_CORRECT", "CHAOS_WRONG", "CORRECT", "FINAL_STATES", "INITIAL_STATES",
    "MAJORITY_CORRECT", "MAJORITY_WRONG", "MINORITY_CORRECT", "MINORITY_WRONG", "WRONG",
    "answer_changes", "clear_majority", "final_state", "initial_state", "initial_states_by_player",
    "transitions",
    # decisions
    "judge_side_agreement", "model_family", "rounds_to_decision_distribution", "rounds_to_decision_summary",
    # timeline
    "answer_timeline", "vote_breakdown",
]
