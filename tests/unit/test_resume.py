"""Safe resume and clear endings: a resume checks before it changes anything, refuses finished
debates, and when it fails before any progress leaves the debate exactly as it was; forcing a
decision before anyone spoke, or messaging an unknown agent, gets a clear answer."""
from __future__ import annotations

import functools

import pytest

from mad_core import ConfigError, Controller, DebateEngine, exports
from mad_core.cli import main
from mad_core.events import DebateFinished, DecisionReached, TurnFinished
from mad_core.models.scripted import unregister_script
from mad_core.resume import prepare_resume, resume_debate
from mad_core.store import ResumeRefused, Store, list_debates
from tests import builders
from tests.builders import run


config = functools.partial(builders.config, rounds=2, max_rounds=2, retry_base_delay=0)  # 3 agents, 2 rounds


def stopped_debate(model: str, store: Store, rounds: int = 2) -> str:
    """A debate stopped once round 1 is over."""

    def stop(event, engine):  # at the step boundary after Agent 3's turn
        if isinstance(event, TurnFinished) and event.turn.agent == "Agent 3":
            engine.controller.stop()

    engine = run(config(model, rounds=rounds, max_rounds=rounds), steer=stop, store=store).engine
    assert store.get_debate(engine.debate_id)["status"] == "stopped"
    return engine.debate_id


def test_a_finished_debate_is_refused_and_left_alone(script, roles, tmp_path, capsys):
    store = Store(tmp_path / "db.sqlite")
    model, _ = script(roles())
    engine = run(config(model), store=store).engine
    before = exports.export_debate(store, engine.debate_id)
    with pytest.raises(ResumeRefused, match="is finished: there is nothing to resume"):
        prepare_resume(engine.debate_id, store)
    capsys.readouterr()  # what ran before (an embedding model's loading bar, say) is not the command's
    assert main(["--db", str(store.path), "resume", engine.debate_id[:8]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: debate ") and "is finished" in err and "Traceback" not in err
    assert exports.export_debate(store, engine.debate_id) == before


def test_a_debate_whose_model_is_gone_is_refused_before_anything_changes(script, roles, tmp_path, capsys):
    store = Store(tmp_path / "db.sqlite")
    model, _ = script(roles())
    debate_id = stopped_debate(model, store)
    unregister_script(model.split("/", 1)[1])
    before = exports.export_debate(store, debate_id)
    with pytest.raises(ConfigError) as refused:
        prepare_resume(debate_id, store)
    assert refused.value.field == "agents[0].model"
    assert main(["--db", str(store.path), "resume", debate_id]) == 2
    err = capsys.readouterr().err
    assert "cannot be resumed here: agents[0].model: Unknown script" in err and "Traceback" not in err
    assert exports.export_debate(store, debate_id) == before


def test_a_resume_that_fails_before_any_progress_leaves_the_debate_exactly_as_it_was(script, roles, tmp_path):
    store = Store(tmp_path / "db.sqlite")
    model, s = script(roles())
    debate_id = stopped_debate(model, store)
    before = exports.export_debate(store, debate_id)
    s.faults = {i: "exception" for i in range(s.calls, s.calls + 100)}  # the model now fails every call
    ends = [e for e in resume_debate(debate_id, store) if isinstance(e, DebateFinished)]
    assert [e.status for e in ends] == ["failed"]
    assert "RuntimeError: scripted fault: exception" in ends[0].reason  # the consumer hears the cause
    assert exports.export_debate(store, debate_id) == before


def test_a_resume_that_fails_after_progress_keeps_the_new_turns(script, roles, tmp_path):
    store = Store(tmp_path / "db.sqlite")
    model, s = script(roles())
    debate_id = stopped_debate(model, store, rounds=3)
    turns_before = len(store.turns(debate_id))
    s.faults = {i: "exception" for i in range(s.calls + 1, s.calls + 100)}  # one more call succeeds
    ends = [e for e in resume_debate(debate_id, store) if isinstance(e, DebateFinished)]
    assert [e.status for e in ends] == ["failed"]
    debate = store.get_debate(debate_id)
    assert debate["status"] == "failed" and "every turn of round 3 failed" in debate["reason"]
    assert "Agent 1: RuntimeError: scripted fault: exception" in debate["reason"]
    ok = [t for t in store.turns(debate_id) if t.status == "ok"]
    assert len(ok) == turns_before + 1  # the new turn is kept, and so are the failed ones
    assert len(store.turns(debate_id)) == turns_before + 1 + 2 + 3


def test_forcing_a_decision_before_anyone_spoke_ends_stopped_with_a_reason(script, roles, tmp_path):
    store = Store(tmp_path / "db.sqlite")
    model, s = script(roles())
    controller = Controller()
    controller.force_decision()
    events = run(config(model), controller=controller, store=store)
    end = [e for e in events if isinstance(e, DebateFinished)]
    assert [(e.status, e.answer) for e in end] == [("stopped", None)]
    assert "forced before any agent had spoken" in end[0].reason
    assert not [e for e in events if isinstance(e, DecisionReached)] and s.calls == 0
    debate = store.get_debate(events.engine.debate_id)
    assert (debate["status"], debate["answer"]) == ("stopped", None)
    assert "nothing to decide" in debate["reason"]


def test_a_message_to_an_unknown_agent_before_the_start_is_refused_and_nothing_is_written(script, roles,
                                                                                          tmp_path):
    store = Store(tmp_path / "db.sqlite")
    model, s = script(roles())
    controller = Controller()
    controller.say("Psst.", ["Agent 9"])  # no debate yet: the controller cannot know the agents
    with pytest.raises(ConfigError) as refused:
        DebateEngine(config(model), controller=controller, store=store)
    assert refused.value.field == "targets" and "Agent 9" in str(refused.value)
    assert list_debates(store) == [] and s.calls == 0
