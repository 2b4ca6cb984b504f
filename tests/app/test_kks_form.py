"""The Debate page with seed 001's per-player Knight-Knave-Spy debate: the puzzle generator fills
the form, the mode's own fields appear with its paradigm, and its phases show in the transcript."""
from __future__ import annotations

from app_helpers import SCRIPT, app, join, keys, texts

from mad_core.config import DebateConfig
from mad_core.kks_mode import assignment_text
from mad_core.store import Store
from mad_core.tasks import kks
from madlab_ui.forms import form_config


def test_generated_puzzle_fills_the_form_and_its_debate_shows_every_phase():
    at = app()
    assert "kks_fields" not in keys(at)  # the mode's fields only with its paradigm
    at.number_input(key="kks_players").set_value(3)
    at.number_input(key="kks_seed").set_value(4)
    at.button(key="generate_kks").click().run()
    puzzle = kks.generate(3, 4)
    assert at.text_area(key="question").value == puzzle.text
    assert at.session_state["reference"] == assignment_text(puzzle.solution, puzzle.names)
    assert at.selectbox(key="paradigm").value == "kks_per_player" and "kks_fields" in keys(at)
    at.number_input(key="kks_depth").set_value(2)
    at.selectbox(key="kks_order").set_value("agreed").run()
    for i in range(3):
        at.session_state[f"agent_model_{i}"] = f"scripted/{SCRIPT}"
    cfg = DebateConfig.from_dict(form_config(at.session_state))
    assert (cfg.answer_type, cfg.answer_options, cfg.protocol) == ("kks", puzzle.names, "kks_player_vote")
    assert (cfg.kks_depth, cfg.kks_order, cfg.rounds, cfg.max_rounds) == (2, "agreed", 5, 5)
    at.run()
    at.button(key="start").click().run()
    debate_id = at.session_state["debate_id"]
    join(debate_id)
    at.run()
    stored = Store().turns(debate_id)
    # 3 proposals + 3 orders, per player 2 x 3 debate replies + 3 adjustments, 3 finals (the supervisor
    # is asked too: the scripted replies name no roles, so every player is tied).
    kinds = [t.kind for t in stored]
    assert [kinds.count(k) for k in ("proposal", "order", "debate", "adjustment", "final")] == [3, 3, 18, 9, 3]
    shown = "\n".join(texts(at.get_by_key(f"turn_{k}")) for k in range(len(stored)))
    for kind in ("proposal", "order", "debate", "adjustment", "final", "supervisor"):
        assert f"· {kind}" in shown or f"{kind} ·" in shown, kind
    # Each player's round is headed with the player discussed in it.
    headers = [m.value for m in at.markdown if m.value.startswith("#### Round")]
    topics = [h.split(": ", 1)[1] for h in headers if ": " in h]
    assert sorted(topics[1:-1]) == sorted(puzzle.names), headers
    assert "decision_card" in keys(at)
    assert "finished" in texts(at.get_by_key("debate_status"))
