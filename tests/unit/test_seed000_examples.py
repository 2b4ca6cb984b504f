"""Seed 000's worked examples (Kaesberg et al. 2025, Appendix G) through our counting code and engine.

Appendix G prints four discussions with their ballots: G.1 (one discussion, decided by simple,
approval, cumulative and ranked voting), G.2 and G.3 (simple voting) and G.4 (majority
consensus). Each is reproduced with `counting.tally` / `consensus_reached` on the printed
ballots, and as a debate on the scripted model: the agents carry the example's persona names,
reply with the example's final answers, and cast the example's ballots (solutions numbered from 1
in our prompts; the paper lists them as "Solution 1..3" too).

The appendix has no worked example of a tie, of supermajority or of unanimity consensus: their
rules (§3.2, App. C) are tested in test_counting.py and test_engine.py, not here.
"""
from __future__ import annotations

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.events import DecisionAttempted, DecisionReached, TurnFinished, VoteCast
from mad_core.protocols import consensus_reached, tally
from mad_core.protocols.counting import CUMULATIVE_POINTS

QUESTION = ("Answer the following question. If the question is not answerable with the provided "
            "information, write '[UNKNOWN]'. Input: What choir from the area has sung at the Guildhall?")
PHIL, CHORAL = "Southampton Philharmonic Choir", "Southampton Choral Society"

# Appendix G.1, "Result" lines: per protocol the agents (in order), their final answers, and the
# ballots as printed ("X voted for answer from Y", "approved answers from ...", "allocated points:
# ...", "ranked answers: 1. ... 2. ... 3. ..."), as 0-based solution indices.
G1 = {
    "simple_voting": dict(
        agents=["Music Connoisseur", "Choir Conductor", "Music Journalist"],
        answers=[PHIL, CHORAL, PHIL],
        ballots=[2, 2, 2],  # all three voted for the Music Journalist's answer
        scores=[0.0, 0.0, 3.0], winner=2),
    "approval_voting": dict(
        agents=["Music Critic", "Local Music Event Coordinator", "Information Architect"],
        answers=[PHIL, f"{CHORAL} and {PHIL}", f"{PHIL} {CHORAL}"],
        ballots=[[2, 0], [2], [2]],  # Critic: Architect, Critic; the others: Architect
        scores=[1.0, 0.0, 3.0], winner=2),
    "cumulative_voting": dict(
        agents=["Local Music Enthusiast", "Archivist", "Music Journalist"],
        answers=[f"{CHORAL} {PHIL}", f"{PHIL} {CHORAL}", f"{PHIL} and {CHORAL}"],
        ballots=[{1: 9, 2: 1}, {0: 2, 1: 4, 2: 4}, {0: 1, 1: 2, 2: 7}],
        scores=[3.0, 15.0, 12.0], winner=1),
    "ranked_voting": dict(
        agents=["Music Journalist", "Local Music Expert", "Concert Promoter"],
        answers=[f"{PHIL} and {CHORAL}."] + [f"{PHIL} and {CHORAL}"] * 2,
        ballots=[[0, 1, 2]] * 3,  # all three: 1. Music Journalist 2. Local Music Expert 3. Concert Promoter
        scores=[9.0, 6.0, 3.0], winner=0),  # MALLM's count with 3 solutions: 3, 2, 1 points
}


def _ballot_text(protocol: str, ballot) -> str:
    """The ballot as an agent would write it in reply to our voting prompt (1-based)."""
    if protocol == "simple_voting":
        return str(ballot + 1)
    if protocol == "approval_voting":
        return ", ".join(str(i + 1) for i in ballot)
    if protocol == "ranked_voting":
        return " ".join(str(i + 1) for i in ballot)
    return "{" + ", ".join(f'"{i + 1}": {p}' for i, p in ballot.items()) + "}"


def _voting_debate(script, roles, protocol, agents, answers, ballots):
    votes = {agent: _ballot_text(protocol, ballot) for agent, ballot in zip(agents, ballots)}
    model, _ = script(roles(dict(zip(agents, answers)), votes))
    config = DebateConfig.from_dict({"question": QUESTION, "protocol": protocol, "rounds": 3, "max_rounds": 5,
                                     "agents": [{"label": a, "model": model} for a in agents]})
    events = list(DebateEngine(config).run())
    return events


def _of(events, cls):
    return [e for e in events if isinstance(e, cls)]


@pytest.mark.parametrize("protocol", list(G1))
def test_g1_ballots_count_to_the_printed_outcome(protocol):
    """Seed 000 App. G.1 ("Successfull Voting Discussion"): the printed ballots of each protocol,
    counted by `tally`. Simple voting gives the MALLM solution printed there (the Music
    Journalist's "Southampton Philharmonic Choir"); for the other three the appendix prints the
    ballots only, and the counts follow from App. C's rules (approvals summed; points summed;
    ranked: best total rank)."""
    example = G1[protocol]
    result = tally(protocol, example["ballots"], 3)
    assert result.scores == example["scores"]
    assert (result.winner, result.tied, result.valid, result.invalid) == (example["winner"], [], 3, 0)
    if protocol == "simple_voting":
        assert example["answers"][result.winner] == PHIL


def test_g1_cumulative_ballots_spend_the_prompts_ten_points():
    """Seed 000 App. G.1 cumulative voting: every printed allocation sums to 10, the budget of the
    prompt (App. E.2, Figure 18) and of MALLM's check, not the 25 of §3.2 / App. C's prose:
    our CUMULATIVE_POINTS follows the prompt."""
    assert [sum(b.values()) for b in G1["cumulative_voting"]["ballots"]] == [CUMULATIVE_POINTS] * 3


def test_g1_ranked_ballots_count_as_mallm_counts_them():
    """Seed 000 App. G.1 ranked voting. App. C: "adding the ranking indices ... best cumulative
    rank"; MALLM's code gives min(5, agents) - position points (3, 2, 1 here), and so do we."""
    ballots = G1["ranked_voting"]["ballots"]
    mallm = [float(sum(3 - ballot.index(i) for ballot in ballots)) for i in range(3)]
    assert mallm == [9.0, 6.0, 3.0]
    ours = tally("ranked_voting", ballots, 3)
    assert ours.scores == mallm and ours.winner == 0


@pytest.mark.parametrize("protocol", list(G1))
def test_g1_as_a_debate_on_the_scripted_model(script, roles, protocol):
    """Seed 000 App. G.1 as a debate: three turns of discussion (voting starts after the third,
    §3.1 and MALLM's vote_turn=3), the agents' final answers extracted (App. E.1), one ballot
    each as printed, and the decision the counts give."""
    example = G1[protocol]
    events = _voting_debate(script, roles, protocol, example["agents"], example["answers"], example["ballots"])
    discussion = [e.turn for e in _of(events, TurnFinished) if e.turn.kind == "discussion"]
    assert [t.round for t in discussion] == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    votes = _of(events, VoteCast)
    assert sorted(v.agent for v in votes) == sorted(example["agents"]) and all(v.valid for v in votes)
    assert {v.round for v in votes} == {3}
    attempts = _of(events, DecisionAttempted)
    assert [a.reached for a in attempts] == [True]
    decision = _of(events, DecisionReached)[0]
    assert decision.solutions == example["answers"]
    assert decision.scores == example["scores"]
    assert decision.winner_index == example["winner"]
    assert decision.winner_agent == example["agents"][example["winner"]]
    assert decision.answer == example["answers"][example["winner"]]
    assert decision.fallback is None


# Appendix G.2 and G.3: simple voting, the ballots printed as "X voted for answer from Y".
G2 = dict(agents=["Economist", "Ethnobotanist", "Research Biologist"],
          answers=["Biodiversity", "Biodiversity provides critical support for drug discovery and the "
                                   "availability of economic resources.", "Biodiversity"],
          ballots=[1, 1, 1])
G3_ANSWER = ("C) In an English sentence, enclitics (auxiliary verbs and pronouns) tend to appear next to "
             "the main verb, usually before any other adverbs or modifiers, but their placement can vary "
             "depending on sentence structure and context.")
G3 = dict(agents=["Linguist", "English Language Teacher", "Grammar Analyst"],
          answers=[G3_ANSWER, "[UNKNOWN]", "[UNKNOWN]"],
          ballots=[0, 0, 0])


@pytest.mark.parametrize("example, winner", [(G2, 1), (G3, 0)], ids=["G.2", "G.3"])
def test_g2_g3_unanimous_simple_votes_pick_the_voted_answer(script, roles, example, winner):
    """Seed 000 App. G.2 ("Agents Tricked") and G.3 ("Bad Voting"): all three agents vote for one
    agent's answer, which becomes the MALLM solution even where the voters' own final answers
    differ from it (G.3: two agents answered "[UNKNOWN]" and still voted for the Linguist's C)."""
    result = tally("simple_voting", example["ballots"], 3)
    assert (result.winner, result.scores) == (winner, [3.0 if i == winner else 0.0 for i in range(3)])
    events = _voting_debate(script, roles, "simple_voting", example["agents"], example["answers"],
                            example["ballots"])
    decision = _of(events, DecisionReached)[0]
    assert (decision.winner_agent, decision.answer) == (example["agents"][winner], example["answers"][winner])


def test_g4_majority_consensus_counts_the_proposer_and_one_agreement():
    """Seed 000 App. G.4: the Music Connoisseur proposes (SOLUTION), the Choir Conductor agrees
    (AGREED): "only one round, as they already had a high enough agreement score". Two of three
    agents support the proposal: at least 50 % (MALLM's ThresholdConsensus, `>=`)."""
    assert consensus_reached("majority_consensus", [True, True, False]) is True
    assert consensus_reached("majority_consensus", [True, False, False]) is False  # the proposer alone


def test_g4_majority_consensus_debate_ends_after_the_second_speaker(script):
    """Seed 000 App. G.4 as a debate on the scripted model: the discussion ends right after the
    Choir Conductor's [AGREE] in turn 1 (consensus is checked after every answer, §3.2 and
    MALLM); the third agent (the appendix never shows it) does not speak; the last speaker
    extracts the final answer, the wrong "Southampton Choral Society" the appendix reports."""
    agents = ["Music Connoisseur", "Choir Conductor", "Music Journalist"]
    proposal = ("As a Music Historian, I've been through the archives and checked the event schedules of "
                "the Guildhall. One of the choirs that has sung at the Guildhall is Southampton Choral Society!")
    agreement = ("[AGREE] I can confirm that the Southampton Choral Society is indeed one of the choirs "
                 "that have sung at the Guildhall.")

    def reply(messages, info):
        meta = info["metadata"]
        if meta["kind"] == "extraction":
            return CHORAL
        return {"Music Connoisseur": proposal, "Choir Conductor": agreement}.get(meta["agent"], "[AGREE]")

    model, _ = script(reply)
    config = DebateConfig.from_dict({"question": QUESTION, "protocol": "majority_consensus", "rounds": 1,
                                     "max_rounds": 5, "agents": [{"label": a, "model": model} for a in agents]})
    events = list(DebateEngine(config).run())
    turns = [e.turn for e in _of(events, TurnFinished)]
    assert [(t.agent, t.kind, t.round) for t in turns] == [
        ("Music Connoisseur", "discussion", 1), ("Choir Conductor", "discussion", 1),
        ("Choir Conductor", "extraction", 1)]
    assert [t.agreement for t in turns[:2]] == [None, True]
    decision = _of(events, DecisionReached)[0]
    assert (decision.answer, decision.winner_agent, decision.round) == (CHORAL, "Music Connoisseur", 1)
    assert decision.details["agree"] == {"Music Connoisseur": True, "Choir Conductor": True,
                                         "Music Journalist": False}
    assert not _of(events, VoteCast)
