"""Prediction polls (mad_core/polls.py): validated input that writes nothing when refused, one
prediction per voter (a second one replaces the first), counts hidden until the reveal, who
predicted the decision, and predictions from many threads at once. Voters identified by device,
"Something else" and the migration: test_poll_identity.py."""
from __future__ import annotations

import threading

import pytest

from mad_core import polls
from mad_core.events import DecisionReached
from mad_core.polls import PollError
from mad_core.store import Store

CONFIG = {"question": "Which gas do plants absorb?", "protocol": "simple_voting", "paradigm": "memory",
          "agents": [{"label": "Agent 1", "model": "scripted/echo"}, {"label": "Agent 2", "model": "scripted/echo"}]}
DEBATE = "d" * 32


@pytest.fixture
def store(tmp_path):
    opened = Store(tmp_path / "polls.db")
    opened.create_debate(DEBATE, CONFIG)
    yield opened
    opened.close()


def decide(store: Store, answer: str = "I am sure.\nFinal answer: CO2") -> None:
    store.record(DecisionReached(round=1, protocol="simple_voting", answer=answer, winner_agent="Agent 1",
                                 winner_index=0), DEBATE)


def counts(store: Store) -> tuple[int, int]:
    return (store.db.execute("SELECT COUNT(*) FROM polls").fetchone()[0],
            store.db.execute("SELECT COUNT(*) FROM predictions").fetchone()[0])


def test_the_migrations_create_polls_and_predictions_with_one_prediction_per_device(store):
    applied = store.applied_migrations()
    assert applied.index("m005_polls") == applied.index("m004_experiments") + 1
    assert applied.index("m007_poll_devices") == applied.index("m006_codebook") + 1
    assert set(store.db["polls"].columns_dict) == {"id", "debate_id", "question", "options", "status", "created_at",
                                                   "round", "marked_right"}
    assert set(store.db["predictions"].columns_dict) == {"poll_id", "device", "voter", "option", "at"}
    assert store.db["predictions"].pks == ["poll_id", "device"]


def test_open_predict_change_close_reveal_and_results(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", " O2 ", "co2", ""], question="Which gas wins?")
    poll = polls.get_poll(store, poll_id)
    assert poll["options"] == ["CO2", "O2"] and poll["status"] == "open" and poll["question"] == "Which gas wins?"
    assert polls.polls_of(store, DEBATE)[0]["id"] == poll_id
    polls.predict(store, poll_id, "Ada", "O2")
    polls.predict(store, poll_id, "Bo", "CO2")
    polls.predict(store, poll_id, " Ada ", "CO2")  # Ada changes her mind: updated, not added
    hidden = polls.results(store, poll_id)
    assert hidden["total"] == 2 and hidden["voters"] == ["Ada", "Bo"]
    # Must not happen: counts, predictions or the decision given out before the reveal.
    assert hidden["counts"] is None and hidden["predictions"] is None and hidden["decision"] is None
    polls.close(store, poll_id)
    with pytest.raises(PollError, match="closed") as refused:
        polls.predict(store, poll_id, "Cy", "O2")
    assert refused.value.field == "poll_id" and polls.results(store, poll_id)["total"] == 2
    decide(store)
    polls.reveal(store, poll_id)
    shown = polls.results(store, poll_id)
    assert shown["counts"] == {"CO2": 2, "O2": 0} and shown["decision"] == "CO2"
    assert shown["right"] == ["Ada", "Bo"]
    assert {p["voter"]: (p["option"], p["right"]) for p in shown["predictions"]} == \
        {"Ada": ("CO2", True), "Bo": ("CO2", True)}
    with pytest.raises(PollError, match="revealed"):
        polls.close(store, poll_id)


def test_a_revealed_poll_without_a_decision_says_so_and_a_wrong_prediction_is_wrong(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    polls.predict(store, poll_id, "Ada", "O2")
    polls.reveal(store, poll_id)  # an open poll is closed by the reveal
    assert polls.results(store, poll_id)["decision"] is None
    assert polls.results(store, poll_id)["right"] == []
    decide(store, "Final answer: **o2**")
    assert polls.results(store, poll_id)["right"] == ["Ada"]  # compared as normalized answers


@pytest.mark.parametrize("call, field", [
    (lambda s, p: polls.predict(s, p, "", "CO2"), "voter"),
    (lambda s, p: polls.predict(s, p, "   ", "CO2"), "voter"),
    (lambda s, p: polls.predict(s, p, "x" * 81, "CO2"), "voter"),
    (lambda s, p: polls.predict(s, p, "Ada", "N2"), "option"),
    (lambda s, p: polls.predict(s, p, "Ada", None), "option"),
    (lambda s, p: polls.predict(s, "nope", "Ada", "CO2"), "poll_id"),
    (lambda s, p: polls.open_poll(s, "no-such-debate", ["a", "b"]), "debate_id"),
    (lambda s, p: polls.open_poll(s, DEBATE, ["a", "A"]), "options"),
    (lambda s, p: polls.open_poll(s, DEBATE, "a\nb"), "options"),
    (lambda s, p: polls.open_poll(s, DEBATE, [str(i) for i in range(13)]), "options"),
    (lambda s, p: polls.open_poll(s, DEBATE, ["a", "b" * 201]), "options[1]"),
    (lambda s, p: polls.open_poll(s, DEBATE, ["a", "b"], question=" "), "question"),
])
def test_bad_input_names_the_field_and_writes_nothing(store, call, field):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    before = counts(store)
    with pytest.raises(PollError) as refused:
        call(store, poll_id)
    assert refused.value.field == field and str(refused.value).startswith(f"{field}: ")
    assert counts(store) == before


def test_agent_options_are_the_distinct_final_answers():
    answers = {"Agent 1": "Long reasoning.\nFinal answer: 42", "Agent 2": "Final answer: 42.0",
               "Agent 3": "I think it is 41", "Agent 4": ""}
    assert polls.agent_options(answers) == ["42", "I think it is 41"]  # free text: the default type
    assert polls.agent_options(answers, {"answer_type": "number"}) == ["42", "41"]


def test_agent_options_of_a_yes_no_debate_are_the_short_answers_not_the_replies():
    """The trial's "Is 91 a prime number? Answer yes or no.": three ~40-word replies became three
    radio options cut mid-sentence. Read with the answer type they are "no" and "yes"."""
    rambling = ("91 is not a prime number but 2*3 = 6 more than 7 so it's composite by 4 other numbers to "
                "get from 5, which is also divisible by both 2 and 3. If you have already answered that")
    replies = {"Agent 1": rambling + "\nFinal answer: No", "Agent 2": "Yes! 91 is a prime, since " + rambling,
               "Agent 3": "The answer to this question is 2*3 = 6 which is composite by 4 but not a prime",
               "Agent 4": "no."}
    assert polls.agent_options(replies, {"answer_type": "yes_no"}) == ["no", "yes"]
    # Must not happen: a whole reply as an option, or an unreadable one (Agent 3) offered at all.
    config = {"answer_type": "yes_no", "question": "Is 91 a prime number? Answer yes or no."}
    assert all(len(option) <= 3 for option in polls.agent_options(replies, config))


def test_agent_options_in_free_text_are_cut_at_a_word():
    reply = "Paris, the capital of France, which sits on the Seine in the north of the country, says the atlas"
    options = polls.agent_options({"Agent 1": reply, "Agent 2": "Lyon"}, {"answer_type": "text"})
    assert options == ["Paris, the capital of France, which sits on the Seine in…", "Lyon"]
    assert len(options[0]) <= polls.AGENT_OPTION_CHARS


def test_a_prediction_after_the_decision_is_refused_and_not_counted(store):
    """The trial: the projector showed the decision next to "1 prediction · open" and a new phone's
    vote was taken. A live debate's decision closes the poll in the store, whatever page sends."""
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    polls.predict(store, poll_id, "Ada", "O2")
    decide(store)  # the live debate decides after the poll was opened
    assert polls.get_poll(store, poll_id)["status"] == "decided"
    assert polls.polls_of(store, DEBATE)[0]["status"] == "decided"
    with pytest.raises(PollError, match="the debate has decided") as refused:
        polls.predict(store, poll_id, "Bo", "CO2")
    assert refused.value.field == "poll_id"
    with pytest.raises(PollError, match="the debate has decided"):
        polls.predict(store, poll_id, "Ada", "CO2")  # nor may a voter change their prediction
    # Must not happen: the late vote counted, or the changed one.
    assert polls.results(store, poll_id)["total"] == 1
    polls.close(store, poll_id)  # already closed: nothing to do, no error
    polls.reveal(store, poll_id)
    assert polls.results(store, poll_id)["counts"] == {"CO2": 0, "O2": 1}


def test_a_replayed_debate_decided_before_the_poll_closes_when_the_decision_is_shown(store):
    decide(store)  # a stored debate: decided long before the class replays it
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    polls.predict(store, poll_id, "Ada", "CO2")  # the replay has not reached the decision: open
    polls.close_on_decision(store, poll_id)  # the presenter shows the decision
    assert polls.get_poll(store, poll_id)["status"] == "decided"
    with pytest.raises(PollError, match="the debate has decided"):
        polls.predict(store, poll_id, "Bo", "O2")
    assert polls.results(store, poll_id)["total"] == 1
    closed = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    polls.close(store, closed)
    polls.close_on_decision(store, closed)  # closed by the teacher before: it stays "closed"
    assert polls.get_poll(store, closed)["status"] == "closed"


def test_concurrent_predictions_from_threads_are_all_kept_once(store):
    poll_id = polls.open_poll(store, DEBATE, ["CO2", "O2"])
    voters = [f"student {i}" for i in range(12)]
    start = threading.Barrier(len(voters) + 2)
    errors: list[BaseException] = []

    def vote(voter: str, options: list[str]) -> None:
        own = Store(store.path)  # a connection per thread, as the app does
        try:
            start.wait(timeout=30)
            for option in options:
                polls.predict(own, poll_id, voter, option)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=vote, args=(v, ["O2", "CO2"] if i % 2 else ["CO2"]))
               for i, v in enumerate(voters)]
    # two more threads hammer one voter: whatever the interleaving, that voter keeps one prediction
    threads += [threading.Thread(target=vote, args=("twice", ["CO2", "O2"] * 5)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    rows = list(store.db.query("SELECT voter, option FROM predictions WHERE poll_id = ?", [poll_id]))
    assert sorted(r["voter"] for r in rows) == sorted([*voters, "twice"])
    assert {r["voter"]: r["option"] for r in rows if r["voter"] != "twice"} == {v: "CO2" for v in voters}
    polls.reveal(store, poll_id)
    assert polls.results(store, poll_id)["counts"]["CO2"] >= len(voters)


def test_deleting_a_debate_deletes_its_polls_and_predictions_only(store):
    other = "e" * 32
    store.create_debate(other, CONFIG)
    polls.predict(store, polls.open_poll(store, DEBATE, ["CO2", "O2"]), "Ada", "CO2")
    kept = polls.open_poll(store, other, ["CO2", "O2"])
    polls.predict(store, kept, "Bo", "O2")
    store.delete_debate(DEBATE)
    # Must not happen: a deleted debate's poll left behind, or another debate's poll taken with it.
    assert counts(store) == (1, 1)
    assert polls.polls_of(store, DEBATE) == [] and polls.results(store, kept)["total"] == 1
