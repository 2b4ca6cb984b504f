"""What every number MAD Lab shows means: one entry per metric or column of a page, a chart or a CSV.

What it is for: the Glossary page (pages/7_Glossary.py) draws `ENTRIES` with a search box
(`search`); README.md's "Glossary" section is `markdown()` (tests/unit/test_glossary.py keeps the
two equal); a page that shows a metric passes `help=help_for(name)` to the widget that shows it,
so the explanation is one click (a hover) away.

Each entry is a dict:
  * ``name``: the name people read on the page ("Holm p", "smooth accuracy");
  * ``keys``: the other names it goes by (a CSV column, a report key, a column title);
  * ``sentence``: ONE sentence in plain words, no formula, no paper: what it tells you;
  * ``formula`` (may be ""): how it is computed, in plain text;
  * ``source`` (may be ""): where it comes from (a seed paper, "seed 001 App. B"; or a statistics
    reference);
  * ``group``: where it is shown (one of GROUPS).

Names are looked up loosely (`help_for`): case, "_" / "-" / spaces, a "round_" prefix (the
per-debate CSV's round columns), a "_mean" / "_sd" / "_n" suffix (the results CSV) and the
"vs <baseline name>" columns ("vs_single_p_holm" is Holm p) all find their entry.

What it must not do: import anything of the project (it is plain data the UI and the docs read)
or hold HTML or Markdown of its own: the page escapes every text, the README shows formulas as
code.
"""
from __future__ import annotations

import re
from typing import Any

DEBATE, EXPERIMENT, CSV = "A debate's metrics", "Experiment results", "Columns of the per-debate CSV"
CODING = "Coders' agreement (coding projects)"
GROUPS = (DEBATE, EXPERIMENT, CSV, CODING)
Entry = dict[str, Any]


def _entry(group: str, name: str, keys: tuple[str, ...], sentence: str, formula: str = "",
           source: str = "") -> Entry:
    return {"name": name, "keys": keys, "sentence": sentence, "formula": formula, "source": source, "group": group}


ENTRIES: tuple[Entry, ...] = (
    # ----- a debate's metrics: the Debate and Transcripts pages, the charts, the per-debate exports -----
    _entry(DEBATE, "correct", ("correct",),
           "Whether the debate's decided answer is the reference answer, read with the debate's answer type.",
           "yes when strict accuracy of the decision is 1"),
    _entry(DEBATE, "strict accuracy", ("accuracy_strict",),
           "1 when an answer is completely right (every player's role of a Knight-Knave-Spy puzzle), else 0; "
           "per round it scores the answer a clear majority of the agents gave.",
           "1[prediction = reference]; a round without a clear majority (at least half of all agents) scores 0",
           "seed 001 App. B (StrictAccuracy)"),
    _entry(DEBATE, "smooth accuracy", ("accuracy_smooth",),
           "Like accuracy, but a partly right answer gets partial credit: the share of a puzzle's players whose "
           "role is right (for a plain answer it equals accuracy).",
           "(1/P) Σ_p 1[role of player p is right]",
           "seed 001 App. B (SmoothAccuracy)"),
    _entry(DEBATE, "accuracy AUC", ("accuracy_auc_strict", "accuracy_auc_smooth", "accuracy_auc"),
           "How early and how steadily the agents' majority was right: the average of the round-by-round "
           "accuracy over all rounds (strict, or smooth for partial credit).",
           "(1/T) Σ_t accuracy(t) over the T discussion rounds; a round without a readable answer counts 0",
           "seed 001 App. B"),
    _entry(DEBATE, "all agree", ("agree_all", "agreement_all"),
           "Whether every agent gave the same answer in the round (1 yes, 0 no); an answer that cannot be read "
           "agrees with nobody.",
           "1[all A agents hold one answer]; per player and averaged for a puzzle",
           "seed 001 App. B (AgreeAll)"),
    _entry(DEBATE, "majority agrees", ("agree_majority", "agreement_majority"),
           "Whether at least half of the agents gave one and the same answer in the round (1 yes, 0 no).",
           "1[max over answers of #agents holding it ≥ ceil(A/2)]",
           "seed 001 App. B (AgreeMajor)"),
    _entry(DEBATE, "agreement AUC (all)", ("agreement_auc", "agreement_all_auc", "all agree AUC"),
           "How early and how steadily all agents agreed: the share of the rounds in which every agent gave "
           "the same answer.",
           "(1/T) Σ_t AgreeAll(t) over the T discussion rounds",
           "seed 001 App. B"),
    _entry(DEBATE, "agreement AUC (majority)", ("agreement_majority_auc", "majority agrees AUC"),
           "How early and how steadily at least half of the agents agreed: the share of the rounds with such "
           "a majority.",
           "(1/T) Σ_t AgreeMajor(t) over the T discussion rounds",
           "seed 001 App. B"),
    _entry(DEBATE, "agreement (chart)", ("agreement", "agreement share"),
           "The share of the agents holding the most common answer of the round, as the Compare page draws it.",
           "#agents holding the most common answer ÷ #agents (an unreadable answer holds none)"),
    _entry(DEBATE, "entropy", ("entropy", "entropy of answers"),
           "How spread out the agents' answers are in a round: 0 bits when all agree, more the more they "
           "split over different answers.",
           "H = −Σ_i p_i · log2(p_i), p_i the share of the readable answers that are answer i; empty when no "
           "answer is readable",
           "seed 003 appendix, Eq. 5"),
    _entry(DEBATE, "log-likelihood", ("log_likelihood",),
           "How much of the group held the reference answer in a round, on a log scale: 0 when every agent was "
           "right, more negative the fewer were, empty when nobody was.",
           "log2(share of all agents whose answer is the reference)",
           "seed 003 appendix (log-likelihood example)"),
    _entry(DEBATE, "correct share", ("correct_share",),
           "The share of the agents whose answer in the round is the reference answer.",
           "#agents right ÷ #agents"),
    _entry(DEBATE, "disagreement", ("disagreement",),
           "The share of pairs of agents whose answers differ in the round: 0 when all agree, 1 when no two "
           "agree (empty with fewer than two readable answers).",
           "#pairs with different answers ÷ #pairs",
           "seed 002 §1 (Degeneration-of-Thought)"),
    _entry(DEBATE, "readable", ("readable", "readable answers"),
           "How many of the agents' answers of the round could be read as the debate's answer type (a letter, "
           "a number, yes or no, a role per player, a text).",
           "#answers read ÷ #agents, shown as \"2 of 3\""),
    _entry(DEBATE, "answer similarity", ("similarity", "answer_similarity", "final-answer similarity"),
           "How alike the agents' final answers are in meaning, from 0 (unrelated) to 1 (the same), measured "
           "with a sentence-embedding model (SBERT).",
           "mean cosine similarity of the SBERT embeddings over all pairs of the agents' final answers; the "
           "summary and experiments take the last round",
           "seed 000 Table 1"),
    _entry(DEBATE, "answer diversity", ("diversity", "answer diversity (SBERT)"),
           "How different the agents' final answers are in meaning: 1 minus the answer similarity, so 0 means "
           "the same answer.",
           "1 − answer similarity",
           "seed 000 Table 1"),
    _entry(DEBATE, "reply similarity", ("reply_similarity",),
           "How alike the agents' whole replies are in meaning, reasoning included, from 0 to 1 (SBERT), a "
           "second measure beside the answer similarity.",
           "mean cosine similarity of the SBERT embeddings over all pairs of the agents' replies"),
    _entry(DEBATE, "path consistency", ("path_consistency", "consistency"),
           "How often an agent's answer matched the other agents' answers: the share of the others that gave "
           "the same answer, averaged over the rounds.",
           "per round (1/(n−1)) Σ_{k≠i} 1[answer_i = answer_k]; an unreadable answer matches nobody",
           "seed 003 Eq. 2"),
    _entry(DEBATE, "initial → final state", ("initial_state", "final_state", "initial state", "final state"),
           "Where an agent stood at the start (in the majority or a minority, right or wrong, or in chaos when "
           "no answer had a clear majority) and whether it ended right or wrong.",
           "initial: majority/minority/chaos × correct/wrong; final: correct/wrong",
           "seed 001 §6.2, Figure 4"),
    _entry(DEBATE, "transitions", ("transitions",),
           "How many agents went from each starting state to each final state, counted per debate and summed "
           "over an experiment's debates.",
           "{initial state: {final state: count}}",
           "seed 001 §6.2, Figure 5"),
    _entry(DEBATE, "answer changes", ("changes", "answer_changes"),
           "How many times an agent changed its answer from one round to the next, each shown with what it "
           "heard just before.",
           "", "seed 001 §6.2"),
    _entry(DEBATE, "Self-BLEU diversity", ("self_bleu_diversity", "Self-BLEU"),
           "How different the two sides' final answers of a two-sided debate are in wording, from 0 (the same "
           "words) to 100 (no word sequence in common).",
           "100 − Self-BLEU, Self-BLEU = mean BLEU-4 of each answer against the other, in percent",
           "seed 002 §4.1"),
    _entry(DEBATE, "judge side agreement", ("judge", "judge_side_agreement", "supports_own_family",
                                            "same_family_side", "judge supported"),
           "Which side the judge decided for, and whether that side's model comes from the judge's own model "
           "family (a sign that a judge favours its own kind).",
           "supports own family = 1[the side chosen is the side whose model family is the judge's]",
           "seed 002 Table 6"),
    _entry(DEBATE, "rounds to decision", ("rounds_to_decision",),
           "The round in which the debate reached its decision; fewer means the agents settled sooner.",
           "", "seed 000 Table 2"),
    _entry(DEBATE, "calls", ("calls",),
           "How many model calls the debate (or the agent) made: replies, votes, extractions, judges.", ""),
    _entry(DEBATE, "tokens", ("tokens", "prompt tokens + completion tokens"),
           "How many tokens (pieces of words) the models read and wrote, prompts and replies together.",
           "prompt tokens + completion tokens over every call",
           "seed 002 (cost in generated tokens)"),
    _entry(DEBATE, "prompt tokens", ("prompt_tokens",),
           "How many tokens the model read for a call: the instructions, the question and what it was shown "
           "of the debate.", ""),
    _entry(DEBATE, "completion tokens", ("completion_tokens",),
           "How many tokens the model wrote in its reply.", ""),
    _entry(DEBATE, "cost (USD)", ("cost_usd", "cost", "estimated cost"),
           "The estimated price of the model calls in US dollars, from litellm's price list: 0 for models that "
           "run on this machine, empty when the price is not known.",
           "Σ over calls of prompt tokens × input price + completion tokens × output price"),
    _entry(DEBATE, "latency", ("latency_s", "seconds", "seconds in model calls"),
           "How many seconds a model call took from asking to the last word of the reply (a person's seat: "
           "the seconds from the turn's start to the reply).", ""),
    _entry(DEBATE, "challenged", ("challenge_rate", "challenged"),
           "The share of debates whose decided answer the first agent challenged with a new answer in the "
           "challenge step.",
           "#debates challenged ÷ #debates with a challenge step",
           "seed 000 §5, Figure 6"),
    _entry(DEBATE, "changed by the challenge", ("challenge_changed",),
           "The share of debates whose decision the challenge step replaced with another answer.",
           "#debates whose decision changed ÷ #debates with a challenge step",
           "seed 000 §5"),
    _entry(DEBATE, "challenge improved", ("challenge_improved",),
           "Of the challenged answers that could be scored, the share whose new answer scored higher against "
           "the reference than the answer it challenged.",
           "#new answers scoring higher ÷ #challenged answers with a reference",
           "seed 000 §5, Figure 7"),
    _entry(DEBATE, "challenge worsened", ("challenge_worsened",),
           "Of the challenged answers that could be scored, the share whose new answer scored lower against the "
           "reference than the answer it challenged.",
           "#new answers scoring lower ÷ #challenged answers with a reference",
           "seed 000 §5, Figure 7"),
    _entry(DEBATE, "agent challenge rate", ("agent_challenge_rate",),
           "The share of the agents asked in the challenge step that disagreed with the decided answer.",
           "#agents that challenged ÷ #agents asked",
           "seed 000 §5, Figure 6"),
    # ----- experiment results: the Experiments page's tables, plots and CSVs -----
    _entry(EXPERIMENT, "accuracy", ("accuracy", "acc_a", "acc_b"),
           "The share of a configuration's debates whose decided answer is the reference answer; a debate that "
           "reached no decision counts as wrong.",
           "#debates right ÷ #debates judged (debates whose item has a reference)",
           "seed 001 App. B (StrictAccuracy)"),
    _entry(EXPERIMENT, "95 % interval", ("accuracy_low", "accuracy_high", "accuracy_interval", "interval",
                                         "95 % interval of accuracy"),
           "The range the true accuracy most likely lies in, given how few debates were run: with 95 % "
           "confidence it is between the two numbers.",
           "Wilson score interval with one debate per item; when items repeat (several seeds), a percentile "
           "bootstrap that resamples whole items",
           "Wilson 1927; Efron & Tibshirani 1993"),
    _entry(EXPERIMENT, "vs baseline", ("vs", "difference", "diff", "diff_low", "diff_high",
                                         "vs_baseline_diff"),
           "How much more accurate this configuration was than the baseline on the same items and seeds "
           "(positive means better), with the range it most likely lies in and its Holm p.",
           "accuracy(configuration) − accuracy(baseline) over the paired (item, seed) runs; 95 % interval by a "
           "paired bootstrap that resamples whole items"),
    _entry(EXPERIMENT, "baseline", ("vs_baseline_baseline",),
           "A simple reference configuration run on the same items and seeds (one agent alone, say), to tell "
           "whether debating helps at all.", ""),
    _entry(EXPERIMENT, "configuration", ("label", "config_key", "config_label"),
           "One combination of the grid's settings, or a baseline, whose debates make one row of the results.",
           ""),
    _entry(EXPERIMENT, "A / B", ("a", "b", "config_a", "config_b"),
           "The two configurations of a paired comparison; a difference is A's accuracy minus B's.", ""),
    _entry(EXPERIMENT, "items", ("n_items", "item_id"),
           "The questions or puzzles of the task set; each configuration debates each item once per seed.", ""),
    _entry(EXPERIMENT, "seed", ("seed", "seeds"),
           "The number that fixes a debate's random choices (speaking order, sampling), so that a run can be "
           "repeated and configurations meet the same draws.", ""),
    _entry(EXPERIMENT, "level", ("level",),
           "The confidence level of the intervals: 0.95 means 95 % intervals.", ""),
    _entry(EXPERIMENT, "wall time", ("wall_s",),
           "How many seconds a debate took from its start to its end, by the clock on the wall.", ""),
    _entry(EXPERIMENT, "pairs", ("n_pairs",),
           "How many (item, seed) runs both configurations of a comparison finished and could be judged, so "
           "that they are compared one to one.", ""),
    _entry(EXPERIMENT, "A right, B wrong", ("a_right_b_wrong",),
           "How many of the paired runs configuration A got right and configuration B got wrong.", ""),
    _entry(EXPERIMENT, "A wrong, B right", ("a_wrong_b_right",),
           "How many of the paired runs configuration A got wrong and configuration B got right.", ""),
    _entry(EXPERIMENT, "both right / both wrong", ("both_right", "both_wrong"),
           "How many of the paired runs both configurations got right, or both got wrong: they say nothing "
           "about which one is better.", ""),
    _entry(EXPERIMENT, "McNemar p", ("p_mcnemar", "mcnemar"),
           "How likely a split at least this uneven between \"A right, B wrong\" and \"A wrong, B right\" would "
           "be if both configurations were equally accurate: a small p (below 0.05) says the difference is "
           "unlikely to be chance.",
           "exact two-sided binomial test of the discordant pairs (A right B wrong vs A wrong B right) at 1/2",
           "McNemar 1947"),
    _entry(EXPERIMENT, "Holm p", ("p_holm", "holm"),
           "The McNemar p made stricter because a sweep makes many comparisons at once, so that the chance of "
           "any false alarm over the whole sweep stays at 5 %.",
           "sort the m p-values, multiply the k-th smallest by (m − k + 1), keep the sequence rising, cap at 1",
           "Holm 1979"),
    _entry(EXPERIMENT, "Cohen's h", ("cohens_h",),
           "The size of the accuracy difference on a scale that does not depend on the number of debates: "
           "about 0.2 is small, 0.5 medium, 0.8 large.",
           "h = 2·asin(√accuracy A) − 2·asin(√accuracy B)",
           "Cohen 1988"),
    _entry(EXPERIMENT, "odds ratio", ("odds_ratio", "discordant odds ratio"),
           "Among the paired runs where exactly one of the two configurations was right, how many times more "
           "often that was A than B (empty when B never was).",
           "(A right, B wrong) ÷ (A wrong, B right)"),
    _entry(EXPERIMENT, "right → wrong", ("right_to_wrong",),
           "How many debates' first-round majority answer was right but the final decision wrong: discussion "
           "talked the agents out of a right answer.",
           "#runs with first round right and final decision wrong"),
    _entry(EXPERIMENT, "wrong → right", ("wrong_to_right",),
           "How many debates' first-round majority answer was wrong but the final decision right: discussion "
           "fixed it.",
           "#runs with first round wrong and final decision right"),
    _entry(EXPERIMENT, "stayed right", ("stayed_right",),
           "How many debates were right after the first round and still right at the decision.", ""),
    _entry(EXPERIMENT, "stayed wrong", ("stayed_wrong",),
           "How many debates were wrong after the first round and still wrong at the decision.", ""),
    _entry(EXPERIMENT, "skipped", ("skipped",),
           "How many runs were left out of the counts because their first round or their decision could not be "
           "judged (no reference, no readable answer).", ""),
    _entry(EXPERIMENT, "net", ("net",),
           "What discussion gained overall: positive when it fixed more answers than it broke.",
           "wrong → right − right → wrong"),
    _entry(EXPERIMENT, "mean ± sd", ("mean", "sd", "mean_sd", "± sd"),
           "The average over the debates that ended and have the value, and how much single debates vary "
           "around it (the sample standard deviation).",
           "mean = Σx/n; sd = √(Σ(x − mean)² / (n − 1)), none when n < 2"),
    _entry(EXPERIMENT, "n", ("n", "_n"),
           "How many debates had the value the mean is taken over.", ""),
    _entry(EXPERIMENT, "debates / finished / failed", ("debates", "finished", "failed"),
           "How many debates a configuration planned, how many finished, and how many failed (a failed debate "
           "counts as wrong).", ""),
    # ----- the per-debate CSV's columns (Transcripts page, `python -m mad_core export --format csv`) -----
    _entry(CSV, "debate_id", ("debate_id",),
           "The debate the row belongs to, so that the CSVs of many debates can be stacked into one table.", ""),
    _entry(CSV, "question", ("question",),
           "The question the debate was about, repeated on every row.", ""),
    _entry(CSV, "reference", ("reference", "reference answer"),
           "The answer the debate is scored against, when the task has one, repeated on every row.", ""),
    _entry(CSV, "answer_type", ("answer_type", "answers read as"),
           "How the debate's answers are read and compared: choice (a letter), number, yes_no, kks (a role per "
           "player) or text.", ""),
    _entry(CSV, "turn_id", ("turn_id",),
           "The turn's own id, the one annotations and forks refer to.", ""),
    _entry(CSV, "agent", ("agent",),
           "Who spoke: an agent's label, or the judge, the summarizer or the supervisor.", ""),
    _entry(CSV, "model", ("model",),
           "The model that wrote the turn, as a litellm name (provider/model); \"person\" when a person typed "
           "it in a seat.", ""),
    _entry(CSV, "seat", ("seat",),
           "A seat's turn (an agent a person speaks for): person (the person typed it), stand-in (the seat's "
           "time limit passed and the stand-in model spoke for it) or skipped (nobody spoke); empty for a "
           "model agent's turn.", ""),
    _entry(CSV, "status", ("status",),
           "Whether the model call succeeded (ok), failed, or was cut off (interrupted).", ""),
    _entry(CSV, "content", ("content", "text"),
           "The reply exactly as the model wrote it.", ""),
    _entry(CSV, "seq", ("seq", "turn_seq"),
           "The turn's place in the debate, counting from 0 (a fork's \"after turn N\").", ""),
    _entry(CSV, "round", ("round",),
           "The discussion round of the turn; round 0 holds the independent first drafts.", ""),
    _entry(CSV, "kind", ("kind",),
           "What the turn was: a discussion reply, a draft, a vote, a final-answer extraction, a judge's "
           "verdict, a challenge, a summary or a persona.", ""),
    _entry(CSV, "answer", ("answer", "stated answer"),
           "The final answer the turn stated, as its paradigm took it from the reply (before the answer type "
           "reads it).", ""),
    _entry(CSV, "answer_read", ("answer_read", "answer as read"),
           "The turn's own answer as the debate's answer type reads it (\"I think 18 apples\" reads 18 in a "
           "number debate), empty when the turn states none that can be read.",
           "answer_types.shown_answer(reply, answer type), the reading every display and the metrics use"),
    _entry(CSV, "confidence", ("confidence",),
           "How sure the agent said it was, from 1 to 10, when the debate asks agents for their confidence.",
           "", "seed 001 Table 1 (C3)"),
    _entry(CSV, "annotations", ("annotations",),
           "The tags and notes people attached to the turn in the reading room, as \"tag: note; ...\".", ""),
    _entry(CSV, "round_* columns", ("round_*", "round metrics"),
           "The round's measures (entropy, agreement, accuracy, similarity) repeated on every discussion turn "
           "of that round; filter on kind to count each round once.", ""),
    _entry(CSV, "requested_at", ("requested_at", "requested"),
           "When the moderator asked for a steering action (pause, resume, stop, a message, decide now), as "
           "seconds since 1970 in the exports.", ""),
    _entry(CSV, "applied at (ts)", ("ts", "applied", "applied at"),
           "When the engine carried a steering action out, at the next boundary between steps, so it is never "
           "before it was requested.", ""),
    _entry(CODING, "unit", ("unit kind",),
           "What one decision of a coder is about: a whole turn (did the coder apply this code anywhere in the "
           "turn) or one character of a turn's text (does one of the coder's passages with this code cover it).",
           "", "Krippendorff 2004, unitizing; the choice is shown with every table"),
    _entry(CODING, "n units", ("n_units", "units"),
           "How many units the figures are computed over: the turns (or characters) of the debates that every "
           "compared coder has coded.",
           "", ""),
    _entry(CODING, "percent agreement", ("percent_agreement",),
           "The share of units on which every compared coder made the same decision, without any correction for "
           "agreement by chance.",
           "units where all coders agree / units rated by two or more coders", ""),
    _entry(CODING, "Cohen's kappa", ("cohen_kappa", "cohen_kappa_low", "cohen_kappa_high", "Cohen's κ"),
           "How much two coders agree beyond what chance would give: 1 is perfect, 0 is chance level, below 0 "
           "is worse than chance.",
           "κ = (observed agreement − chance agreement) / (1 − chance agreement), chance from each coder's own "
           "rates; interval from its asymptotic standard error",
           "Cohen 1960; computed by scikit-learn, interval by statsmodels"),
    _entry(CODING, "Fleiss' kappa", ("fleiss_kappa", "fleiss_kappa_low", "fleiss_kappa_high", "Fleiss' κ"),
           "Agreement beyond chance for two or more coders, with chance taken from how often the codes are used "
           "overall.",
           "κ = (mean pairwise agreement − Σ pooled category share²) / (1 − Σ pooled category share²)",
           "Fleiss 1971; computed by statsmodels, with missing ratings and its interval by irrCAC (Gwet 2014)"),
    _entry(CODING, "Krippendorff's alpha", ("krippendorff_alpha", "krippendorff_alpha_low", "krippendorff_alpha_high",
                                            "alpha", "Krippendorff's α"),
           "Agreement beyond chance for any number of coders that tolerates missing ratings; researchers often "
           "ask for at least 0.8, or 0.667 for tentative conclusions.",
           "α = 1 − observed disagreement / disagreement expected by chance (nominal)",
           "Krippendorff 2011; computed by the krippendorff package, interval by irrCAC"),
    _entry(CODING, "Gwet's AC1", ("gwet_ac1", "gwet_ac1_low", "gwet_ac1_high", "AC1"),
           "Agreement beyond chance that stays stable when one code is much more common than the other, where "
           "the kappas can drop sharply even though coders mostly agree.",
           "AC1 = (observed agreement − chance agreement) / (1 − chance agreement), chance from how far the "
           "categories are from equally used",
           "Gwet 2008 and 2014; computed by irrCAC"),
    _entry(CODING, "overall", ("overall row",),
           "The same figures with every unit and code decision of the table pooled together, so that one number "
           "sums up the whole codebook.",
           "items = units × codes, each a present or absent decision", ""),
    _entry(CODING, "gold", ("gold coding", "adjudicated coding"),
           "The coding the project's lead settled where coders differed; each coder's agreement with it says "
           "how close they came to the final reading.",
           "", ""),
)

_SEP = re.compile(r"[\s_\-]+")
_SUFFIXES = (" mean", " sd", " n")
_VERSUS = re.compile(r"^vs .*? (baseline|diff low|diff high|diff|p mcnemar|p holm|cohens h)$")


def _norm(name: str) -> str:
    return _SEP.sub(" ", str(name or "").casefold()).strip()


def _index() -> dict[str, Entry]:
    index: dict[str, Entry] = {}
    for entry in ENTRIES:
        for name in (entry["name"], *entry["keys"]):
            index.setdefault(_norm(name), entry)
    return index


_INDEX = _index()


def entry_for(name: str) -> Entry | None:
    """The entry a metric or column name stands for (looked up loosely, see the module docstring)."""
    key = _norm(name)
    candidates = [key]
    if key.startswith("round ") and key != "round":
        candidates.append(key.removeprefix("round "))
    candidates += [key[: -len(suffix)] for suffix in _SUFFIXES if key.endswith(suffix)]
    versus = _VERSUS.match(key)
    if versus:
        candidates.append(versus.group(1) if versus.group(1) != "diff" else "vs")
    elif key.startswith("vs "):
        candidates.append("vs")
    return next((_INDEX[k] for k in candidates if k in _INDEX), None)


def entry_id(entry: Entry) -> str:
    """A key for the entry (its name in lower-case letters, digits and "_": "Holm p" -> "holm_p")."""
    return re.sub(r"[^a-z0-9]+", "_", entry["name"].casefold()).strip("_")


def help_for(name: str) -> str | None:
    """The one-sentence explanation of a metric or column (for a widget's `help=`); None if unknown."""
    entry = entry_for(name)
    return None if entry is None else entry["sentence"]


def help_lines(*names: str) -> str | None:
    """Several explanations for one widget's `help=` ("entropy: How spread out ...", one a paragraph),
    unknown names left out; None when none is known."""
    found = [entry for entry in map(entry_for, names) if entry is not None]
    return "\n\n".join(f"{entry['name']}: {entry['sentence']}" for entry in found) or None


def search(query: str | None) -> list[Entry]:
    """The entries whose name, other names, sentence, formula or source hold every word of `query`
    (case-insensitive), in ENTRIES' order; every entry for an empty query."""
    words = str(query or "").casefold().split()
    found = []
    for entry in ENTRIES:
        haystack = " ".join([entry["name"], *entry["keys"], entry["sentence"], entry["formula"],
                             entry["source"]]).casefold()
        if all(word in haystack for word in words):
            found.append(entry)
    return found


HEADING = "## Glossary"
INTRO = ("What every number on a page, a chart or a CSV means: one sentence in plain words, then how it is "
         "computed and where it comes from (the papers are listed under \"The papers\"). The app's Glossary "
         "page shows the same entries with a search box, and the pages that show a metric explain it on "
         "hover; this section is generated from `mad_core/glossary.py` (`glossary.markdown()`).")


def entry_markdown(entry: Entry) -> str:
    """One entry as a Markdown list item: name, other names as code, the sentence, formula, source."""
    also = [key for key in entry["keys"] if key != entry["name"]]
    name = f"`{entry['name']}`" if re.search(r"[_*]", entry["name"]) else entry["name"]  # a column name: as code
    line = f"- **{name}**" + (f" ({', '.join(f'`{k}`' for k in also)})" if also else "")
    line += f": {entry['sentence']}"
    if entry["formula"]:
        line += f" Formula: `{entry['formula']}`."
    if entry["source"]:
        line += f" From: {entry['source']}."
    return line


def markdown() -> str:
    """README.md's Glossary section: the heading, an introduction, the entries group by group."""
    lines = [HEADING, "", INTRO]
    for group in GROUPS:
        lines += ["", f"### {group}", ""]
        lines += [entry_markdown(entry) for entry in ENTRIES if entry["group"] == group]
    return "\n".join(lines) + "\n"


__all__ = ["ENTRIES", "GROUPS", "Entry", "entry_for", "entry_id", "help_for", "help_lines", "search", "markdown", "entry_markdown"]
