"""A person takes a seat in a debate (issue 23, items 3, 5 and 6): mad_core/seats.py and its engine side.

The other agents are scripted models; the test plays the person from its own thread, waiting on the seat
registry's gate (`SeatRegistry.wait_for`) and on listeners' events, never sleeping. The registry runs on a
fake clock: a time limit passes when the test moves the clock and wakes the waits.
"""
from __future__ import annotations

import csv
import io
import threading

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.config import PERSON, ConfigError
from mad_core.events import TurnFinished, VoteCast
from mad_core.exports import export_debate, import_debate, to_csv, to_markdown
from mad_core.models.response_cache import ResponseCache
from mad_core import classroom
from mad_core import seats as seats_module
from mad_core.seats import FORMAT_HINTS, Seat, SeatError, SeatRegistry
from mad_core.store import Store
from mad_core.view import DebateView
from tests.builders import QUESTION, of, run, turns
from tests.conftest import role_replies

SEAT = "Agent 2"


def cheap_embed(texts):
    """A cheap deterministic stand-in for SBERT (the CSV's similarity columns)."""
    return [[float(len(t)), float(sum(map(ord, t)) % 97), 1.0] for t in texts]

LIMIT = 120.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def seats(clock):
    return SeatRegistry(clock=clock)


def agents(model: str, **seat) -> list[dict]:
    return [{"label": "Agent 1", "model": model}, {"label": SEAT, "model": PERSON, **seat},
            {"label": "Agent 3", "model": model}]


def seat_config(model: str, seat: dict | None = None, **changes) -> DebateConfig:
    data = {"question": QUESTION, "agents": agents(model, **(seat or {})), "rounds": 1, "max_rounds": 1,
            "protocol": "solution_counting", "extract_final_answers": False, **changes}
    return DebateConfig.from_dict(data)


class Running:
    """A debate run in a background thread while the test plays the person."""

    def __init__(self, cfg: DebateConfig, seats: SeatRegistry, **options):
        self.events: list = []
        self.finished: dict[str, threading.Event] = {label: threading.Event() for label in ("Agent 1", SEAT, "Agent 3")}
        listeners = [self._hear, *options.pop("listeners", ())]
        self.engine = DebateEngine(cfg, seats=seats, listeners=listeners, **options)
        self.seats, self.seat_id = seats, self.engine.seat_ids[SEAT]
        self.thread = threading.Thread(target=lambda: self.events.extend(self.engine.run()), daemon=True)
        self.thread.start()

    def _hear(self, event) -> None:
        if isinstance(event, TurnFinished) and event.turn.agent in self.finished:
            self.finished[event.turn.agent].set()

    def waiting(self, kind: str | None = None, other_than: str | None = None) -> Seat:
        seat = self.seats.wait_for(self.seat_id, lambda s: s.state == "waiting" and s.turn_id != other_than
                                   and (kind is None or s.kind == kind), timeout=30)
        assert seat is not None, "the seat never waited for a reply"
        return seat

    def answer(self, text: str, kind: str | None = None, device: str = "phone-1") -> Seat:
        seat = self.waiting(kind)
        self.seats.claim(self.seat_id, device, "Ann")
        return self.seats.reply(self.seat_id, device, text, turn_id=seat.turn_id)

    def finish(self) -> list:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the debate did not end"
        return self.events

    def seat_turns(self) -> list:
        return [t for t in turns(self.events) if t.agent == SEAT]


def timed_out(run_: Running, clock: Clock) -> None:
    """Move the clock past the seat's time limit and let the wait see it."""
    run_.waiting()
    clock.now += LIMIT + 1
    run_.seats.wake()


# ----- what the seat shows -----------------------------------------------------------------------
def test_the_seat_shows_exactly_the_messages_a_model_in_its_place_receives(script, seats):
    model, history = script(role_replies())
    as_model = DebateConfig.from_dict({**seat_config(model).to_dict(), "rounds": 2, "max_rounds": 2,
                                      "agents": agents(model)[:1] + [{"label": SEAT, "model": model}]
                                      + agents(model)[2:]})
    run(as_model)
    sent_to_model = [call["messages"] for call in history.history if call["metadata"]["agent"] == SEAT]
    assert len(sent_to_model) == 2  # round 1 and round 2
    history.history.clear()

    person = Running(DebateConfig.from_dict({**seat_config(model).to_dict(), "rounds": 2, "max_rounds": 2}), seats)
    shown = []
    for _ in range(2):  # the person types what the model wrote, so the next prompts are the same too
        seat = person.waiting(other_than=shown[-1][0] if shown else None)
        shown.append((seat.turn_id, seat.messages))
        person.seats.claim(person.seat_id, "phone-1", "Ann")
        person.seats.reply(person.seat_id, "phone-1", f"My reasoning as {SEAT}.\nFinal answer: Paris",
                           turn_id=seat.turn_id)
    person.finish()
    assert [messages for _, messages in shown] == sent_to_model
    assert [t.prompt for t in person.seat_turns()] == sent_to_model  # the turn keeps what was shown
    assert all(call["metadata"]["agent"] != SEAT for call in history.history)  # never a model call


def test_other_agents_calls_complete_while_the_seat_waits_holding_no_call_slot(script, seats):
    model, history = script(role_replies())
    person = Running(seat_config(model, paradigm="simultaneous", max_concurrency=1, cache="readwrite"), seats)
    person.waiting()
    # One call slot: Agent 3, planned after the seat, finishes while the seat still waits.
    assert person.finished["Agent 1"].wait(30) and person.finished["Agent 3"].wait(30)
    assert seats.get(person.seat_id).state == "waiting" and not person.finished[SEAT].is_set()
    person.answer("Lyon.\nFinal answer: Lyon")
    person.finish()
    assert [c["metadata"]["agent"] for c in history.history] == ["Agent 1", "Agent 3"]
    assert PERSON not in person.engine.calls._serial_locks  # no per-model lock for a person
    cached = ResponseCache("read").entries_for([person.engine.debate_id])
    assert len(cached) == 2 and all(entry["model"] != PERSON for entry in cached)


# ----- the reply becomes the turn ----------------------------------------------------------------
def test_the_reply_is_a_turn_stored_viewed_exported_and_read_like_an_agents(script, seats):
    model, _ = script(role_replies())
    with Store() as store:
        person = Running(seat_config(model), seats, store=store)
        person.answer("Lyon is my pick.\nFinal answer: Lyon")
        person.finish()
        debate_id = person.engine.debate_id
        stored = next(t for t in store.turns(debate_id) if t.agent == SEAT)
        assert (stored.model, stored.seat, stored.status, stored.kind) == (PERSON, "person", "ok", "discussion")
        assert stored.content == "Lyon is my pick.\nFinal answer: Lyon"
        assert stored.answer == "Lyon"  # the answer reader read it, as it reads a model's
        assert stored.attempts == 1 and stored.prompt_tokens == stored.completion_tokens == 0
        assert [t.seat for t in store.turns(debate_id)] == [None, "person", None]
        view = DebateView.from_store(store, debate_id)
        shown = next(t for t in view.turns if t.agent == SEAT)
        assert (shown.seat, shown.model, shown.answer) == ("person", PERSON, "Lyon")
        copy_id = import_debate(store, export_debate(store, debate_id, embed=cheap_embed), new_id=True)
        assert [t.seat for t in store.turns(copy_id)] == [None, "person", None]
    assert seats.get(person.seat_id).state == "closed"


def test_a_ballot_typed_by_a_person_goes_through_the_same_parser(script, seats):
    model, _ = script(role_replies(votes={"Agent 1": "1", "Agent 3": "1"}))
    person = Running(seat_config(model, protocol="simple_voting"), seats)
    person.answer("Lyon.\nFinal answer: Lyon", kind="discussion")
    first = person.waiting(kind="vote")
    assert first.format_hint == FORMAT_HINTS["ballot"]
    person.seats.reply(person.seat_id, "phone-1", "bananas", turn_id=first.turn_id)  # unreadable: re-asked
    again = person.waiting(kind="vote", other_than=first.turn_id)
    person.seats.reply(person.seat_id, "phone-1", "Solution 2", turn_id=again.turn_id)
    events = person.finish()
    ballots = [(v.attempt, v.valid, v.ballot) for v in of(events, VoteCast) if v.agent == SEAT]
    assert ballots == [(1, False, None), (2, True, 1)]  # "Solution 2" read as the 0-based ballot 1
    assert [t.seat for t in person.seat_turns() if t.kind == "vote"] == ["person", "person"]


def test_a_seat_that_lets_its_ballot_time_out_abstains_and_is_not_asked_again(script, seats, clock):
    """Must not happen: a skipped ballot re-asked `vote_retries` times, each waiting the whole limit."""
    model, _ = script(role_replies(votes={"Agent 1": "1", "Agent 3": "1"}))
    person = Running(seat_config(model, protocol="simple_voting", vote_retries=2), seats)
    person.answer("Lyon.\nFinal answer: Lyon", kind="discussion")
    person.waiting(kind="vote")
    clock.now += LIMIT + 1
    seats.wake()
    events = person.finish()
    ballots = [(v.attempt, v.valid) for v in of(events, VoteCast) if v.agent == SEAT]
    assert ballots == [(1, False)]  # once, invalid: an abstention
    assert [t.seat for t in person.seat_turns() if t.kind == "vote"] == ["skipped"]
    assert person.engine.status == "finished"


def test_a_persons_solution_is_read_from_what_they_typed_not_asked_again_for_extraction(script, seats):
    """With extract_final_answers (seed 000 E.1) the models' drafts are extracted by their models; a
    person is asked only their turn and their ballot, and their solution is read from their text."""
    model, history = script(role_replies(votes={"Agent 1": "1", "Agent 3": "1"}))
    person = Running(seat_config(model, protocol="simple_voting", extract_final_answers=True), seats)
    person.answer("I would say Lyon.\nFinal answer: Lyon", kind="discussion")
    ballot = person.waiting(kind="vote")
    assert "Lyon" in ballot.messages[-1]["content"]  # the person's solution is on the ballot
    person.seats.reply(person.seat_id, "phone-1", "2", turn_id=ballot.turn_id)
    events = person.finish()
    assert [t.kind for t in person.seat_turns()] == ["discussion", "vote"]  # no extraction asked of the person
    extracted = [call["metadata"]["agent"] for call in history.history if call["metadata"]["kind"] == "extraction"]
    assert sorted(extracted) == ["Agent 1", "Agent 3"]
    assert person.engine.status == "finished" and of(events, VoteCast)


# ----- steering during the wait -------------------------------------------------------------------
def test_stop_during_the_wait_cuts_the_seats_turn_and_nobody_speaks_after(script, seats):
    model, history = script(role_replies())
    person = Running(seat_config(model), seats)  # memory paradigm: Agent 3 speaks after the seat
    person.waiting()
    person.engine.controller.stop()
    person.finish()
    (turn,) = person.seat_turns()
    assert (turn.status, turn.error, turn.content) == ("interrupted", "stopped before the person replied", "")
    assert person.engine.status == "stopped"
    assert [c["metadata"]["agent"] for c in history.history] == ["Agent 1"]  # Agent 3 never spoke
    with pytest.raises(SeatError, match="ended"):
        seats.claim(person.seat_id, "phone-1", "Ann")


def test_decide_now_during_the_wait_ends_the_wait_and_the_protocol_decides(script, seats):
    model, history = script(role_replies())
    person = Running(seat_config(model, rounds=2, max_rounds=2), seats)
    person.waiting()
    person.engine.controller.force_decision()
    person.finish()
    (turn,) = person.seat_turns()
    assert (turn.status, turn.error) == ("interrupted", "a decision was forced before the person replied")
    assert person.engine.status == "finished" and person.engine.answer == "Paris"
    assert [c["metadata"]["agent"] for c in history.history] == ["Agent 1"]  # no further turn, no round 2


def test_pause_stops_the_clock_and_a_reply_sent_while_paused_becomes_the_turn_on_resume(script, seats, clock):
    model, _ = script(role_replies())
    person = Running(seat_config(model), seats)
    seat = person.waiting()
    controller = person.engine.controller
    controller.pause()
    assert seats.wait_for(person.seat_id, lambda s: s.paused, 30) is not None
    clock.now += 10 * LIMIT  # far past the limit, but paused: it does not count
    controller.resume()
    resumed = seats.wait_for(person.seat_id, lambda s: not s.paused, 30)
    assert resumed.state == "waiting" and resumed.seconds_left(clock.now) == pytest.approx(LIMIT)
    controller.pause()
    assert seats.wait_for(person.seat_id, lambda s: s.paused, 30) is not None
    seats.claim(person.seat_id, "phone-1", "Ann")
    seats.reply(person.seat_id, "phone-1", "Lyon.\nFinal answer: Lyon", turn_id=seat.turn_id)
    assert not person.finished[SEAT].is_set()  # kept, but the turn ends only once the debate resumes
    controller.resume()
    assert person.finished[SEAT].wait(30)
    person.finish()
    (turn,) = person.seat_turns()
    assert (turn.status, turn.seat, turn.answer) == ("ok", "person", "Lyon")


# ----- the time limit ------------------------------------------------------------------------------
def test_at_the_time_limit_the_turn_is_skipped_and_a_late_reply_is_refused(script, seats, clock):
    gate = threading.Event()

    def replies(messages, info):  # Agent 3 (after the seat) waits until the late reply was tried
        if info["metadata"]["agent"] == "Agent 3":
            assert gate.wait(30)
        return role_replies()(messages, info)

    model, _ = script(replies)
    with Store() as store:
        person = Running(seat_config(model), seats, store=store)
        seat = person.waiting()
        seats.claim(person.seat_id, "phone-1", "Ann")
        timed_out(person, clock)
        assert person.finished[SEAT].wait(30)
        with pytest.raises(SeatError) as refused:
            seats.reply(person.seat_id, "phone-1", "Sorry, here it is: Lyon", turn_id=seat.turn_id)
        assert refused.value.field == "seat" and "too late" in refused.value.message
        assert "time limit passed" in refused.value.message
        assert seats.get(person.seat_id).state == "timed_out"  # nothing changed
        gate.set()
        person.finish()
        (turn,) = person.seat_turns()
        assert (turn.status, turn.seat, turn.content) == ("interrupted", "skipped", "")
        assert turn.error == f"skipped: {SEAT} did not reply within the time limit (120 s)"
        stored = next(t for t in store.turns(person.engine.debate_id) if t.agent == SEAT)
        assert (stored.seat, stored.content, stored.error) == ("skipped", "", turn.error)  # the late text kept nowhere
    assert person.engine.status == "finished"  # the debate went on without the seat


def test_at_the_time_limit_the_stand_in_model_speaks_for_the_seat(script, seats, clock):
    model, others = script(role_replies())
    stand_in, substitute = script(["I speak for the seat.\nFinal answer: Rome"])
    with Store() as store:
        person = Running(seat_config(model, {"at_time_limit": "model", "stand_in_model": stand_in}), seats,
                         store=store)
        shown = person.waiting().messages
        timed_out(person, clock)
        person.finish()
        rows = list(csv.DictReader(io.StringIO(to_csv(store, person.engine.debate_id, embed=cheap_embed))))
        handout = to_markdown(store, person.engine.debate_id, embed=cheap_embed)
    assert [(r["agent"], r["model"], r["seat"]) for r in rows if r["kind"] == "discussion"] == [
        ("Agent 1", model, ""), (SEAT, stand_in, "stand-in"), ("Agent 3", model, "")]
    assert f"spoke for {SEAT} (time limit" in handout
    (turn,) = person.seat_turns()
    assert (turn.model, turn.seat, turn.status, turn.answer) == (stand_in, "stand-in", "ok", "Rome")
    assert turn.content == "I speak for the seat.\nFinal answer: Rome"
    assert turn.error == f"{stand_in} spoke for {SEAT} (time limit, 120 s)"
    assert [call["messages"] for call in substitute.history] == [shown]  # what the person would have seen
    assert all(call["metadata"]["agent"] != SEAT for call in others.history)


# ----- who holds the seat --------------------------------------------------------------------------
def test_one_device_holds_a_seat_at_a_time_until_it_is_released(seats):
    (seat_id,) = seats.open_debate("d" * 32, [(1, SEAT, LIMIT)]).values()
    seats.claim(seat_id, "phone-1", "Ann")
    seats.claim(seat_id, "phone-1", "Ann")  # a reload keeps it
    with pytest.raises(SeatError, match="Ann holds this seat") as refused:
        seats.claim(seat_id, "phone-2", "Bob")
    assert refused.value.field == "seat" and seats.get(seat_id).holder == "phone-1"
    with pytest.raises(SeatError) as not_holder:
        seats.reply(seat_id, "phone-2", "me instead")
    assert not_holder.value.field == "device"
    seats.release(seat_id)  # the teacher frees it
    assert seats.claim(seat_id, "phone-2", "Bob").nickname == "Bob"
    with pytest.raises(SeatError, match="not this seat's turn"):
        seats.reply(seat_id, "phone-2", "too early")
    assert seats_module.MAX_NICKNAME_CHARS == classroom.MAX_NICKNAME_CHARS == 24  # one bound: /join's and a seat's
    for nickname in ("", "x" * 25):
        with pytest.raises(SeatError) as bad:
            seats.claim(seat_id, "phone-3", nickname)
        assert bad.value.field == "nickname"
    with pytest.raises(SeatError, match="no such seat"):
        seats.claim("nope", "phone-1", "Ann")


def test_an_empty_or_overlong_reply_is_refused_and_the_seat_still_waits(script, seats):
    model, _ = script(role_replies())
    person = Running(seat_config(model), seats)
    seat = person.waiting()
    seats.claim(person.seat_id, "phone-1", "Ann")
    for text in ("   \n", "x" * 20_001):
        with pytest.raises(SeatError) as refused:
            seats.reply(person.seat_id, "phone-1", text, turn_id=seat.turn_id)
        assert refused.value.field == "text"
    assert seats.get(person.seat_id).state == "waiting"
    seats.reply(person.seat_id, "phone-1", "Paris.\nFinal answer: Paris", turn_id=seat.turn_id)
    person.finish()
    assert person.seat_turns()[0].content == "Paris.\nFinal answer: Paris"


# ----- configuration ----------------------------------------------------------------------------
@pytest.mark.parametrize("seat, field, words", [
    ({"time_limit_s": 1}, "agents[1].time_limit_s", "between 5 and 3600"),
    ({"time_limit_s": "soon"}, "agents[1].time_limit_s", "expected a number"),
    ({"at_time_limit": "wait"}, "agents[1].at_time_limit", "skip, model"),
    ({"at_time_limit": "model"}, "agents[1].stand_in_model", "name the model"),
    ({"at_time_limit": "model", "stand_in_model": PERSON}, "agents[1].stand_in_model", "not a person"),
    ({"at_time_limit": "model", "stand_in_model": "nowhere"}, "agents[1].stand_in_model", "no provider"),
])
def test_bad_seat_settings_are_refused_naming_the_field(seat, field, words):
    data = {"question": QUESTION, "agents": agents("scripted/echo", **seat)}
    found = DebateConfig.problems(data)
    assert [(p.field, words in p.message) for p in found] == [(field, True)]
    with pytest.raises(ConfigError):
        DebateConfig.from_dict(data)


def test_every_agent_a_person_is_refused_and_model_agents_keep_their_settings_unchanged():
    data = {"question": QUESTION, "agents": [{"label": "A", "model": PERSON}, {"label": "B", "model": PERSON}]}
    assert [p.field for p in DebateConfig.problems(data)] == ["agents[0].model"]
    odd = {"question": QUESTION, "agents": [{"label": "A", "model": "scripted/echo", "time_limit_s": "soon"}]}
    assert [p.field for p in DebateConfig.problems(odd)] == ["agents[0].time_limit_s"]  # checked on any agent
    cfg = DebateConfig.from_dict({"question": QUESTION, "agents": agents("scripted/echo")})
    saved = cfg.to_dict()["agents"]
    assert "time_limit_s" not in saved[0] and saved[1]["time_limit_s"] == LIMIT  # a model agent reads as before
    assert DebateConfig.from_dict(cfg.to_dict()) == cfg


def test_a_setting_that_falls_back_to_a_person_first_agent_uses_the_first_model_agent(script, seats, clock):
    model, history = script(role_replies())
    data = {"question": QUESTION, "agents": [{"label": SEAT, "model": PERSON}, {"label": "Agent 1", "model": model}],
            "rounds": 1, "max_rounds": 1, "protocol": "judge", "judge_adaptive_break": False}
    person = Running(DebateConfig.from_dict(data), seats)
    timed_out(person, clock)
    person.finish()
    judged = [t for t in turns(person.events) if t.agent == "judge"]
    assert judged and {t.model for t in judged} == {model}
    assert any(c["metadata"]["agent"] == "judge" for c in history.history)


def test_the_call_plan_counts_the_turns_a_debate_with_a_seat_really_makes(script, seats):
    """The progress bar's plan (live.plan_calls): with extraction on, a person's solution is read
    from their text, so the plan has one extraction fewer per seat; it equals the turns made."""
    from mad_core.live import plan_calls

    model, _ = script(role_replies(votes={"Agent 1": "1", "Agent 3": "1"}))
    cfg = seat_config(model, protocol="simple_voting", extract_final_answers=True)
    person = Running(cfg, seats)
    person.answer("Lyon.\nFinal answer: Lyon", kind="discussion")
    ballot = person.waiting(kind="vote")
    person.seats.reply(person.seat_id, "phone-1", "1", turn_id=ballot.turn_id)
    made = len(turns(person.finish()))
    fewest, _ = plan_calls(cfg.to_dict()).range(1)
    assert fewest == made == 3 + 2 + 3  # 3 discussion turns, 2 extractions (models only), 3 ballots
