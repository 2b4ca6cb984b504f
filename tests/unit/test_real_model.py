"""One whole debate on the real offline model (SmolLM2-135M through llama.cpp and litellm)."""
from __future__ import annotations

import pytest

from mad_core import DebateConfig, DebateEngine
from mad_core.events import DebateFinished, DecisionReached, TokenReceived, TurnFinished
from mad_core.store import Store


@pytest.mark.real_model
def test_offline_default_model_runs_a_debate_end_to_end(tmp_path):
    config = DebateConfig.from_dict({
        "question": "What is 2 + 3?",
        "agents": [{"label": "A", "max_tokens": 24, "temperature": 0.0},
                   {"label": "B", "max_tokens": 24, "temperature": 0.0}],  # default model: local/smollm2-135m
        "rounds": 1, "max_rounds": 1, "protocol": "simple_voting", "seed": 1, "vote_retries": 0,
    })
    assert config.agents[0].model == "local/smollm2-135m"
    store = Store(tmp_path / "real.db")
    engine = DebateEngine(config, store=store)
    events = list(engine.run())
    finished = [e.turn for e in events if isinstance(e, TurnFinished)]
    discussion = [t for t in finished if t.kind == "discussion"]
    assert [t.agent for t in discussion] == ["A", "B"]
    assert all(t.status == "ok" and t.content.strip() and t.completion_tokens > 0 for t in discussion)
    tokens = [e for e in events if isinstance(e, TokenReceived) and e.turn_id == discussion[0].id]
    assert len(tokens) > 3  # it really streamed, piece by piece
    assert any(isinstance(e, DecisionReached) for e in events)  # a vote, valid or not, led to a decision
    assert events[-1] == next(e for e in events if isinstance(e, DebateFinished))
    assert store.get_debate(engine.debate_id)["status"] == "finished"
    assert len(store.turns(engine.debate_id)) == len(finished)
