"""Every prompt MAD Lab sends, in one place and in our own words.

The papers give the intent of each prompt (seed 000 Appendix E, seed 002 Table 11 and its
meta / judge prompts, seed 001 Appendix C); the wording here is ours. Functions return plain
strings or chat message lists and never call a model. A voting rule's instruction is the
rule's own (its file in protocols/, e.g. protocols/simple_voting.py), asked for by `vote_prompt`.
"""
from __future__ import annotations

from typing import Any

from .protocols.rule import ballot_rule

# Seed 002, Table 11: how hard debaters push back. Same intent per level, our wording.
TIT_FOR_TAT = {
    0: "Aim for full agreement: settle every point together until both sides accept each statement.",
    1: "Disagree on most points; you may concede only small, unimportant details.",
    2: "You need not agree with the others: the goal is the correct answer, not harmony.",
    3: "Contest every single point the others make. Do not concede anything.",
}

TIT_FOR_TAT_SUMMARY = {
    0: "0 - seek full consensus on every point",
    1: "1 - mostly disagree, concede only minor points",
    2: "2 - disagree when warranted (the paper's default)",
    3: "3 - disagree with everything",
}

FINAL_ANSWER_FORMAT = "End your reply with one line of the form `Final answer: <your answer>`."
AGREEMENT_FORMAT = (
    "Start your reply with the single word AGREE if you accept this proposal, "
    "or DISAGREE if you do not (then give your own solution), and then explain."
)
CONFIDENCE_FORMAT = "Add one line `Confidence: N/10` saying how sure you are (1 = guessing, 10 = certain)."


def system_prompt(label: str, n_agents: int, persona: str, tit_for_tat: int | None, role: str = "") -> str:
    """The agent's standing instructions: who it is, the setting, and the tit-for-tat level."""
    parts = [f"You are {label}, one of {n_agents} participants in a discussion that tries to answer a question well."]
    if persona:
        parts.append(f"Your role: {persona}")
    if role:
        parts.append(role)
    if tit_for_tat is not None:
        parts.append("This is a debate. " + TIT_FOR_TAT[tit_for_tat])
    return "\n".join(parts)


def task_block(question: str, task: str) -> str:
    lines = []
    if task:
        lines.append(f"Task: {task}")
    lines.append(f"Question: {question}")
    return "\n".join(lines)


def discussion_block(rendered_turns: list[str]) -> str:
    if not rendered_turns:
        return "Nobody has spoken yet: you give the first answer."
    return "What has been said so far:\n\n" + "\n\n".join(rendered_turns)


def proposal_block(agent: str, answer: str) -> str:
    """The proposal a consensus protocol asks an agent to agree or disagree with."""
    return f"The current proposal, from {agent}: {answer}"


def moderator_block(messages: list[str]) -> str:
    return "\n".join(f"A human moderator says to you: {m}" for m in messages)


def turn_prompt(system: str, question: str, task: str, seen: list[str], moderator: list[str],
                instruction: str, formats: list[str]) -> list[dict[str, str]]:
    """Messages for one discussion turn, with what the agent sees packed into one user message."""
    sections = [task_block(question, task), discussion_block(seen)]
    if moderator:
        sections.append(moderator_block(moderator))
    sections.append(" ".join([instruction, *formats]))
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(sections)}]


def summary_prompt(question: str, task: str, seen: list[str]) -> list[dict[str, str]]:
    """Seed 003 App. (ChatEval's summarizer): condense the discussion so far for every participant."""
    system = "You summarize a discussion between several participants for all of them, impartially."
    user = (f"{task_block(question, task)}\n\n{discussion_block(seen)}\n\n"
            "Summarize the discussion so far: each position taken, who holds it, and the main arguments "
            "for and against. Do not add a solution of your own.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def own_solution_prompt(system: str, question: str, task: str, seen: list[str]) -> list[dict[str, str]]:
    """Seed 000 §3.2 (reasoning generator): after a discussion of reasoning only, each agent's own solution."""
    user = (f"{task_block(question, task)}\n\n{discussion_block(seen)}\n\n"
            "The discussion is over. Taking the reasoning above into account, give your own solution. "
            f"{FINAL_ANSWER_FORMAT}")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def extraction_prompt(system: str, question: str, task: str, previous: str,
                      intro: str = "Your last reply was:") -> list[dict[str, str]]:
    """Seed 000 E.1: pull the bare final solution out of an agent's last reply (or the latest messages)."""
    user = (
        f"{task_block(question, task)}\n\n{intro}\n{previous}\n\n"
        "Write only the final solution contained in that text: no agreement, no explanation, no other words. "
        "Keep its wording. If it contains no clear solution, repeat the reply as it is."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def solutions_block(solutions: list[str]) -> str:
    return "\n".join(f"Solution {i + 1}: {s}" for i, s in enumerate(solutions))


def vote_prompt(system: str, protocol: str, question: str, task: str, solutions: list[str], points: int,
                retry_reason: str | None = None) -> list[dict[str, str]]:
    """Seed 000 E.2: ask for a ballot in the protocol's format (numbers shown from 1): its voting
    rule's `instruction` (`protocols.rule.ballot_rule`; KeyError for a protocol that casts none)."""
    rule = ballot_rule(protocol)
    if rule is None:
        raise KeyError(protocol)
    instruction = rule.instruction.format(points=points)
    user = f"{task_block(question, task)}\n\nThe candidate solutions are:\n{solutions_block(solutions)}\n\n{instruction}"
    if retry_reason:
        user += f"\n\nYour previous reply could not be counted ({retry_reason}). Answer again in exactly the format asked."
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def judge_system(n_debaters: int) -> str:
    return (
        f"You moderate a debate between {n_debaters} participants. You read their arguments and judge which "
        "answer is correct. You are impartial and care only about correctness."
    )


def _judge_messages(n_debaters: int, user: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": judge_system(n_debaters)}, {"role": "user", "content": user}]


def judge_break_prompt(question: str, task: str, earlier: list[str], latest: list[tuple[str, str]], n_debaters: int,
                       sides: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Seed 002 discriminative mode: has the debate already produced a correct solution?

    `earlier`: the debate before each speaker's latest turn, one rendered turn each; `latest`:
    (label, latest reply) of every speaker, listed by label. Two-sided debates (`sides`: label ->
    the side it argues) ask which debater's answer the judge supports, by label (MAD's judge reads
    each side's argument of the round and names the supported side). Other paradigms have no sides:
    the judge names the participant whose answer is correct, or none and gives its own."""
    labels = ", ".join(label for label, _ in latest)
    if sides:
        lead = "Each debater's latest argument:"
        named = f"Supported side: the label of the debater whose answer you hold correct (one of: {labels})"
        answer = "Answer: <the correct answer if YES, otherwise leave empty>"
    else:
        lead = "Each participant's latest reply:"
        named = (f"Chosen participant: the label of the participant whose answer you hold correct (one of: {labels}), "
                 "or none if no participant gave it")
        answer = "Answer: <the correct answer in your own words if YES, otherwise leave empty>"
    shown = [f"[{label}]" + (f" ({sides[label]})" if sides and sides.get(label) else "") + f":\n{text.strip()}"
             for label, text in latest]
    sections = [task_block(question, task)]
    if earlier:
        sections.append("Earlier in the debate:\n\n" + "\n\n".join(earlier))
    sections.append(lead + "\n\n" + "\n\n".join(shown))
    sections.append(f"Has the debate already reached a correct answer? Reply with four lines:\nDecision: YES or NO\n"
                    f"{named}\n{answer}\nReason: <one short sentence>")
    return _judge_messages(n_debaters, "\n\n".join(sections))


def judge_extract_prompt(question: str, task: str, transcript: list[str], n_debaters: int) -> list[dict[str, str]]:
    """Seed 002 extractive mode: the round limit is hit, so the judge states the answer itself."""
    user = (
        f"{task_block(question, task)}\n\nThe whole debate:\n\n" + "\n\n".join(transcript) +
        "\n\nThe debate is over. Based on all arguments, give the answer you judge correct. "
        + FINAL_ANSWER_FORMAT
    )
    return _judge_messages(n_debaters, user)


def judge_select_prompt(question: str, task: str, agents: list[str], drafts: list[str],
                        n_debaters: int) -> list[dict[str, str]]:
    """Seed 004: the judge reads every participant's final draft, under its label, and names the winner."""
    shown = "\n\n".join(f"[{agent}]:\n{draft.strip()}" for agent, draft in zip(agents, drafts))
    user = (
        f"{task_block(question, task)}\n\nThe participants' final drafts are:\n\n{shown}\n\n"
        f"Pick the participant whose draft answers the question best. Reply with its label only "
        f"(one of: {', '.join(agents)})."
    )
    return _judge_messages(n_debaters, user)


def _challenge_sections(question: str, task: str, final: str, history: list[str] | None,
                        information: str) -> list[str]:
    """What a challenged agent reads before it is asked (seed 000 §5's settings; MALLM's challenge
    prompts add the discussion history or the extra information before the same question)."""
    sections = [task_block(question, task)]
    if history:
        sections.append(discussion_block(history))
    if information:
        sections.append(f"Background information that may help you:\n{information}")
    sections.append(f"The group settled on this final answer:\n{final}")
    return sections


def challenge_prompt(system: str, question: str, task: str, final: str, *, history: list[str] | None = None,
                     information: str = "") -> list[dict[str, str]]:
    """Seed 000 E.3: does the agent accept the group's final answer? `history` (the "history"
    setting: the discussion as the agent saw it) and `information` (the "information" setting)
    are shown before the answer when given; without them this is the first setting's prompt."""
    sections = _challenge_sections(question, task, final, history, information)
    sections.append("Check it critically. Reply with the single word AGREE if you accept it, "
                    "or DISAGREE if you do not.")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(sections)}]


def challenge_answer_prompt(system: str, question: str, task: str, final: str, *, history: list[str] | None = None,
                            information: str = "") -> list[dict[str, str]]:
    """Seed 000 E.3 (Figure 21): the agent that challenged the answer gives its own (same context)."""
    sections = _challenge_sections(question, task, final, history, information)
    sections.append("You do not accept it. Give the answer you think is right. " + FINAL_ANSWER_FORMAT)
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(sections)}]


def challenge_wrong_answer_prompt(question: str, task: str) -> list[dict[str, str]]:
    """Seed 000 §5's "wrong answer" baseline (MALLM's generate_wrong_answer_prompt): an answer that
    is deliberately wrong, to be put to the agents as if the group had settled on it."""
    system = "You write deliberately wrong answers to questions, for a test of reviewers."
    user = (f"{task_block(question, task)}\n\nGive an answer to this question that is wrong, in the form the "
            "question asks for. Reply with the wrong answer only.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def challenge_information_prompt(question: str, task: str) -> list[dict[str, str]]:
    """Seed 000 §5's "additional information" setting. The paper retrieves Wikipedia passages (RAG);
    MAD Lab runs offline, so a model writes background facts instead, without answering."""
    system = "You supply background knowledge for a discussion, without taking part in it."
    user = (f"{task_block(question, task)}\n\nWrite a few short facts from general knowledge that help "
            "to answer this question: definitions, data, rules that apply. Do not say which answer is correct.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


PERSONA_EXAMPLE = "Geologist: studies how rock layers form and wear away"


def persona_list_prompt(question: str, task: str, n: int, taken: list[str], max_words: int) -> list[dict[str, str]]:
    """Seed 000 (after Kim et al.): ask for `n` task-relevant expert personas (the engine asks for one at
    a time), as a JSON list, none of them among those `taken`, which the prompt shows (mad_core/personas.py
    reads and checks the reply)."""
    taken_text = ("Experts already on the panel:\n" + "\n".join(f"- {p}" for p in taken) + "\n\n") if taken else ""
    noun = "expert" if n == 1 else "experts"
    user = (
        f"{task_block(question, task)}\n\nWe are assembling a panel of experts to discuss this question. "
        f"{taken_text}Describe {n} {noun} whose knowledge helps with this question, each different from the "
        f"others{' and from those already on the panel' if taken else ''}. Describe the person, not the answer: "
        f"do not answer the question, do not repeat it, and use none of its numbers or options. Each description "
        f"is one line of at most {max_words} words, like \"{PERSONA_EXAMPLE}\".\n"
        f'Reply with JSON only, exactly {n} entries: {{"personas": ["<role>: <what this expert knows>"'
        f'{", ..." if n > 1 else ""}]}}'
    )
    return [{"role": "system", "content": "You help set up expert panels."}, {"role": "user", "content": user}]


def persona_retry_prompt(reason: str, n: int, max_words: int) -> str:
    """The re-ask after a persona reply that could not be used: why, and what is wanted instead."""
    wanted = (f"{n} short expert descriptions (at most {max_words} words each), one per agent, none of them"
              if n > 1 else f"one short expert description (at most {max_words} words), not")
    return (f"That reply cannot be used: {reason}. Try again: {wanted} an answer or a copy of the question. "
            'Reply with JSON only: {"personas": [...]}')


# ----- the per-player Knight-Knave-Spy mode (seed 001 §4.1, App. C; driven by kks_mode.py) -------------
# The phases and what each prompt carries follow seed 001 App. C (initial proposal, debate phase,
# self-adjustment phase, final decision, supervisor); the sentences are ours. Seed 001's proposal
# prompt also walks through a solved three-player sample game; we leave it out to keep the prompt
# short for small local models (the method it teaches is stated in KKS_METHOD).
KKS_RULES = (
    "Every player is a knight, a knave or a spy. A knight's statement is always true, a knave's is always "
    "false, and a spy's may be either. Everything the game manager says is true."
)
KKS_METHOD = (
    "Reason from the rules and the hints only: assume nothing they do not say (for instance, that some role "
    "must occur). Try the possible truth values of the statements and role assignments in turn; one that leads "
    "to a contradiction is ruled out. Give every player exactly one of knight, knave or spy, even when you are "
    "unsure: then take the most likely one."
)


def kks_system_prompt(label: str, n_agents: int, persona: str, tit_for_tat: int | None) -> str:
    """An agent's standing instructions in the Knight-Knave-Spy mode."""
    parts = [f"You are {label}, one of {n_agents} agents who solve a Knight-Knave-Spy logic puzzle together, "
             "player by player. " + KKS_RULES]
    if persona:
        parts.append(f"Your role: {persona}")
    if tit_for_tat is not None:
        parts.append("This is a debate. " + TIT_FOR_TAT[tit_for_tat])
    return "\n".join(parts)


def kks_puzzle_block(puzzle: str, task: str) -> str:
    return (f"Task: {task}\n\n" if task else "") + f"The puzzle:\n{puzzle.strip()}"


def kks_entry(agent: str, you: bool, head: str, details: list[str]) -> str:
    """One agent's position in a list: '- Agent 2 (you): knave' and indented detail lines."""
    return "\n".join([f"- {agent}{' (you)' if you else ''}: {head}", *(f"  {d}" for d in details if d)])


def kks_detail(label: str, text: str) -> str:
    return f"{label}: {text}" if text else ""


def kks_confidence(value: Any) -> str:
    """'Confidence: 7/10', or per player 'Confidence: Ann 7/10, Bo 4/10' ("" when none is shown)."""
    if isinstance(value, dict):
        shown = ", ".join(f"{name} {level}/10" for name, level in value.items())
        return f"Confidence: {shown}" if shown else ""
    return f"Confidence: {value}/10" if value is not None else ""


def kks_section(title: str, entries: list[str]) -> str:
    return f"{title}\n" + ("\n".join(entries) if entries else "(nothing yet)")


def kks_assignment_shape(names: list[str], confidence: bool) -> str:
    roles = ", ".join(f'"{name}": "knight|knave|spy"' for name in names)
    shape = '{"roles": {' + roles + "}"
    if confidence:
        shape += ', "confidence": {' + ", ".join(f'"{name}": 1-10' for name in names) + "}"
    shape += ', "explanation": "<your reasoning, under 100 words>"}'
    note = (" For each player, confidence says how sure you are of that role (1 = a guess, 10 = certain); "
            "be honest, a low number is welcome when you are unsure." if confidence else "")
    return f"Reply with one JSON object only, of this form: {shape}. Name every player.{note}"


def kks_stance_shape(player: str, others: list[str], confidence: bool) -> str:
    shape = (f'{{"player": "{player}", "role": "knight|knave|spy", "agree_with": [<agents>], '
             f'"disagree_with": [<agents>], "reasoning": "<why, under 100 words>"')
    shape += ', "confidence": 1-10}' if confidence else "}"
    peers = ", ".join(others) if others else "none"
    return (f"Reply with one JSON object only, of this form: {shape}. In agree_with and disagree_with name only "
            f"other agents ({peers}), never yourself.")


def _kks_messages(system: str, sections: list[str], moderator: list[str]) -> list[dict[str, str]]:
    if moderator:
        sections = [*sections[:-1], moderator_block(moderator), sections[-1]]
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(s for s in sections if s)}]


def kks_proposal_prompt(system: str, puzzle: str, task: str, names: list[str], confidence: bool,
                        moderator: list[str]) -> list[dict[str, str]]:
    """Seed 001 C.1: each agent, alone, assigns a role to every player (and a confidence per player)."""
    ask = (f"Work out the role of every player ({', '.join(names)}) on your own. {KKS_METHOD}\n\n"
           + kks_assignment_shape(names, confidence))
    return _kks_messages(system, [kks_puzzle_block(puzzle, task), ask], moderator)


def kks_order_prompt(system: str, puzzle: str, task: str, names: list[str], proposals: list[str],
                     moderator: list[str]) -> list[dict[str, str]]:
    """Seed 001 C4: the agents agree on the order in which the players are discussed."""
    ask = ("The group will now discuss the players one at a time. Propose the order in which to discuss them "
           "so that the discussion reaches correct roles best: for instance, players whose roles follow most "
           "directly from the hints, or those the agents disagree on most, first. Reply with one JSON object "
           'only, of this form: {"order": [' + ", ".join(f'"{n}"' for n in names) + '] (every player exactly '
           'once, in your order), "reason": "<one sentence>"}.')
    return _kks_messages(system, [kks_puzzle_block(puzzle, task),
                                  kks_section("The agents' initial proposals:", proposals), ask], moderator)


def kks_debate_prompt(system: str, puzzle: str, task: str, player: str, positions: list[str], earlier: list[str],
                      so_far: list[str], others: list[str], confidence: bool,
                      moderator: list[str]) -> list[dict[str, str]]:
    """Seed 001 C.2, debate phase: argue about one player's role, agreeing or disagreeing with the others."""
    ask = (f"Now discuss {player}'s role only. Weigh the other agents' positions on {player} against "
           f"{player}'s statement and its consistency with the other statements and the hints, say which of "
           f"the other agents you agree and disagree with and why, and decide {player}'s role (one of knight, "
           "knave, spy: no other value).\n\n" + kks_stance_shape(player, others, confidence))
    sections = [kks_puzzle_block(puzzle, task), f"Under discussion now: {player}.",
                kks_section(f"Each agent's position on {player} before this discussion:", positions)]
    if earlier:
        sections.append(kks_section("Players discussed earlier:", earlier))
    sections += [kks_section(f"The discussion of {player} so far:", so_far), ask]
    return _kks_messages(system, sections, moderator)


def kks_adjustment_prompt(system: str, puzzle: str, task: str, player: str, discussion: list[str],
                          earlier: list[str], latest: list[str], names: list[str], confidence: bool,
                          moderator: list[str]) -> list[dict[str, str]]:
    """Seed 001 C.2, self-adjustment phase: after the discussion of one player, each agent gives its
    complete assignment again, deciding whether to revise that player's role."""
    ask = (f"The discussion of {player} is over. Decide whether the arguments make you change the role you give "
           f"{player}, then give your complete assignment again: every player, not only {player}.\n\n"
           + kks_assignment_shape(names, confidence))
    sections = [kks_puzzle_block(puzzle, task), kks_section(f"The discussion of {player}:", discussion)]
    if earlier:
        sections.append(kks_section("Players discussed earlier:", earlier))
    sections += [kks_section("Each agent's latest complete assignment:", latest), ask]
    return _kks_messages(system, sections, moderator)


def kks_final_prompt(system: str, puzzle: str, task: str, proposals: list[str], rounds: list[str],
                     names: list[str], confidence: bool, moderator: list[str]) -> list[dict[str, str]]:
    """Seed 001 C.3: with the whole debate in view, each agent's final complete assignment."""
    ask = ("Every player has been discussed. Taking the whole debate into account, give your final "
           "assignment for all players.\n\n" + kks_assignment_shape(names, confidence))
    return _kks_messages(system, [kks_puzzle_block(puzzle, task),
                                  kks_section("Initial proposals:", proposals),
                                  kks_section("The discussion, player by player:", rounds), ask], moderator)


def kks_supervisor_prompt(puzzle: str, task: str, proposals: list[str], rounds: list[str], finals: list[str],
                          tied: dict[str, list[str]], splits: list[str]) -> list[dict[str, str]]:
    """Seed 001 C.3, supervisor: the final vote left some players tied; decide only those, from the debate."""
    system = ("You supervise a debate of several agents about a Knight-Knave-Spy logic puzzle. " + KKS_RULES +
              " You judge impartially, by the soundness of the arguments.")
    shape = ", ".join(f'"{name}": "{"|".join(roles)}"' for name, roles in tied.items())
    ask = ("The agents' final vote is tied for the players below. Read the debate, judge whose reasoning is "
           "consistent with the statements and the hints, and decide the role of each tied player, choosing "
           "among the roles tied for it. Reply with one JSON object only, of this form: "
           f'{{"roles": {{{shape}}}, "explanation": "<why, under 100 words>"}}.')
    return _kks_messages(system, [kks_puzzle_block(puzzle, task),
                                  kks_section("Initial proposals:", proposals),
                                  kks_section("The discussion, player by player:", rounds),
                                  kks_section("Final assignments:", finals),
                                  kks_section("Tied players (votes per role):", splits), ask], [])


# ----- machine pre-coding (mad_core/qda/precode.py; issue 22, item 6) -------------------------------------
def precode_prompt(codebook: list[dict[str, str]], question: str, speaker: str, text: str) -> list[dict[str, str]]:
    """Ask a model which codes of a codebook apply to one turn of a debate. `codebook`: each code's
    `name`, `definition`, `include`, `exclude` and `example` (empty ones left out of the prompt). The
    reply is read by qda/precode.py `read_proposal`: JSON {"codes": [names]}, an empty list for none."""
    entries = []
    for code in codebook:
        lines = [f"- {code['name']}"]
        for label, key in (("means", "definition"), ("use when", "include"), ("not when", "exclude"),
                           ("example", "example")):
            if (code.get(key) or "").strip():
                lines.append(f"  {label}: {' '.join(code[key].split())}")
        entries.append("\n".join(lines))
    user = (f"A debate discussed this question:\n{question}\n\nOne turn of it, by {speaker}:\n<<<\n{text}\n>>>\n\n"
            "The codebook a research team uses to code such turns:\n" + "\n".join(entries) + "\n\n"
            "Which of these codes apply to the turn as a whole? Use only the code names above, exactly as written; "
            "choose none when none fits.\n"
            'Reply with JSON only: {"codes": ["<code name>", ...]}')
    return [{"role": "system", "content": "You code debate transcripts for qualitative research, carefully and "
                                          "only by the codebook's definitions."},
            {"role": "user", "content": user}]
