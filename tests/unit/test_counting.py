"""Counting rules of the voting and consensus protocols, on hand-made ballots."""
import pytest

from mad_core.protocols import TallyResult, consensus_reached, tally
from mad_core.protocols.counting import (
    CONSENSUS_PROTOCOLS,
    CUMULATIVE_POINTS,
    VOTING_PROTOCOLS,
)


def test_protocol_names_and_budget():
    assert VOTING_PROTOCOLS == ("simple_voting", "approval_voting", "ranked_voting", "cumulative_voting")
    assert CONSENSUS_PROTOCOLS == ("majority_consensus", "supermajority_consensus", "unanimity_consensus")
    assert CUMULATIVE_POINTS == 10


# --- simple voting ---------------------------------------------------------------------------

def test_simple_voting_winner():
    result = tally("simple_voting", [0, 2, 2], 3)
    assert result == TallyResult(winner=2, scores=[1.0, 0.0, 2.0], tied=[], valid=3, invalid=0)


def test_simple_voting_tie_has_no_winner():
    result = tally("simple_voting", [0, 1, 2, 1, 0], 3)
    assert result.winner is None
    assert result.tied == [0, 1]
    assert result.scores == [2.0, 2.0, 1.0]


def test_invalid_ballots_are_counted_but_ignored():
    result = tally("simple_voting", [None, 1, None, 0, 1], 2)
    assert (result.winner, result.valid, result.invalid) == (1, 3, 2)
    assert result.scores == [1.0, 2.0]


def test_no_valid_ballot_means_no_winner():
    result = tally("simple_voting", [None, None], 3)
    assert result == TallyResult(winner=None, scores=[0.0, 0.0, 0.0], tied=[], valid=0, invalid=2)


# --- approval voting -------------------------------------------------------------------------

def test_approval_voting_counts_each_approval_once():
    result = tally("approval_voting", [[0, 1], [1, 1, 1], [2]], 3)
    assert result.scores == [1.0, 2.0, 1.0]
    assert result.winner == 1


def test_approval_voting_everyone_approves_everything_is_a_tie():
    result = tally("approval_voting", [[0, 1, 2], [2, 1, 0]], 3)
    assert result.winner is None
    assert result.tied == [0, 1, 2]


# --- ranked voting (MALLM's count: min(5, solutions) - position) ------------------------------

def test_ranked_voting_points_follow_mallm():
    # positions earn 3, 2, 1 points with three solutions (MALLM's RankedVoting.process_results)
    result = tally("ranked_voting", [[0, 1, 2], [1, 0, 2], [1, 2, 0]], 3)
    assert result.scores == [6.0, 8.0, 4.0]
    assert result.winner == 1


def test_ranked_voting_partial_ranking_counts_as_mallm_counts_it():
    """The issue's case: [1,2,3] and [3] (1-based). Under Borda (2,1,0) they tie; under MALLM's
    count solution 3 earns 1 + 3 and solution 1 earns 3: solution 3 wins."""
    result = tally("ranked_voting", [[0, 1, 2], [2]], 3)
    assert result.scores == [3.0, 2.0, 4.0]
    assert (result.winner, result.tied) == (2, [])
    result = tally("ranked_voting", [[2], [2, 0]], 4)  # unranked solutions earn nothing
    assert result.scores == [3.0, 0.0, 8.0, 0.0]


def test_ranked_voting_counts_five_places_at_most():
    result = tally("ranked_voting", [list(range(7))], 7)
    assert result.scores == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0, 0.0]


def test_ranked_voting_tie():
    result = tally("ranked_voting", [[0, 1], [1, 0]], 2)
    assert (result.winner, result.tied, result.scores) == (None, [0, 1], [3.0, 3.0])


def test_ranked_voting_rejects_repeated_solution():
    with pytest.raises(ValueError, match="more than once"):
        tally("ranked_voting", [[0, 0, 1]], 3)


# --- cumulative voting -----------------------------------------------------------------------

def test_cumulative_voting_adds_points():
    result = tally("cumulative_voting", [{0: 6, 1: 4}, {1: 3, 2: 7}, {2: 10}], 3)
    assert result.scores == [6.0, 7.0, 17.0]
    assert result.winner == 2


def test_cumulative_voting_tie():
    result = tally("cumulative_voting", [{0: 5, 1: 5}, None], 3)
    assert (result.winner, result.tied, result.invalid) == (None, [0, 1], 1)


@pytest.mark.parametrize("ballot", [{0: -1}, {0: 2.5}, {0: True}, [0, 1]])
def test_cumulative_voting_rejects_bad_ballots(ballot):
    with pytest.raises(ValueError, match="ballot"):
        tally("cumulative_voting", [ballot], 2)


# --- malformed input -------------------------------------------------------------------------

@pytest.mark.parametrize(
    "name, ballot",
    [
        ("simple_voting", 3),
        ("simple_voting", -1),
        ("simple_voting", "1"),
        ("simple_voting", True),
        ("approval_voting", 1),
        ("approval_voting", [0, 5]),
        ("ranked_voting", [0, 9]),
        ("cumulative_voting", {7: 1}),
    ],
)
def test_malformed_ballot_raises_naming_it(name, ballot):
    with pytest.raises(ValueError) as info:
        tally(name, [ballot], 3)
    assert repr(ballot) in str(info.value)


def test_unknown_voting_protocol_lists_valid_names():
    with pytest.raises(ValueError) as info:
        tally("plurality", [0], 2)
    for name in VOTING_PROTOCOLS:
        assert name in str(info.value)


# --- consensus -------------------------------------------------------------------------------

def test_supermajority_two_of_three_agents_suffice():
    assert consensus_reached("supermajority_consensus", [True, True, False]) is True
    assert consensus_reached("supermajority_consensus", [True, False, False]) is False


def test_supermajority_needs_at_least_66_percent():
    assert consensus_reached("supermajority_consensus", [True] * 2 + [False] * 2) is False
    assert consensus_reached("supermajority_consensus", [True] * 7 + [False] * 3) is True
    # MALLM's `>= 0.66`: exactly 66 % is enough (seed 000 §3.2's "more than" would refuse it)
    assert consensus_reached("supermajority_consensus", [True] * 33 + [False] * 17) is True
    assert consensus_reached("supermajority_consensus", [True] * 32 + [False] * 18) is False


def test_majority_needs_at_least_half():
    # MALLM's ThresholdConsensus (agreeing / agents >= 0.5): 2 of 4 is a majority consensus
    assert consensus_reached("majority_consensus", [True, True, False, False]) is True
    assert consensus_reached("majority_consensus", [True, False, False, False]) is False
    assert consensus_reached("majority_consensus", [True, True, False]) is True
    assert consensus_reached("majority_consensus", [True, False, False]) is False
    # cases of MALLM's own majority-consensus tests (5 panelists, after turn 5)
    assert consensus_reached("majority_consensus", [True] * 3 + [False] * 2) is True
    assert consensus_reached("majority_consensus", [True] * 2 + [False] * 3) is False


def test_unanimity_needs_everyone():
    assert consensus_reached("unanimity_consensus", [True, True, True]) is True
    assert consensus_reached("unanimity_consensus", [True, True, False]) is False
    assert consensus_reached("unanimity_consensus", [True, None]) is False


def test_empty_agreement_is_never_consensus():
    for name in CONSENSUS_PROTOCOLS:
        assert consensus_reached(name, []) is False


def test_threshold_overrides_the_protocol_fraction():
    votes = [True, True, True, False]  # 75 %
    assert consensus_reached("unanimity_consensus", votes, threshold=0.7) is True
    assert consensus_reached("majority_consensus", votes, threshold=0.75) is True  # at least the threshold
    assert consensus_reached("majority_consensus", votes, threshold=0.76) is False
    assert consensus_reached("majority_consensus", votes, threshold=1.0) is False
    assert consensus_reached("majority_consensus", [True] * 4, threshold=1.0) is True


def test_threshold_out_of_range_and_unknown_name():
    with pytest.raises(ValueError):
        consensus_reached("majority_consensus", [True], threshold=1.5)
    with pytest.raises(ValueError) as info:
        consensus_reached("simple_voting", [True])
    assert "unanimity_consensus" in str(info.value)
