"""The Transcripts page: list, search, filters, an opened debate, annotations, exports, fork,
reattach, resume and replay, on debates that a scripted model really ran."""
from __future__ import annotations

import csv
import io
import json

from app_helpers import APP, HELD, TRANSCRIPTS, app, config, join, keys, open_debate, run_debate, texts
from streamlit.testing.v1 import AppTest

from mad_core import codebook, live
from mad_core.config import DebateConfig
from mad_core.store import Store
from madlab_ui.browse import export_files
from madlab_ui.forms import form_config


def listed(at) -> list[str]:
    """The id8s of the debates in the list, in order."""
    return [b.key.removeprefix("open_") for b in at.get_by_key("debate_list").button if b.key.startswith("open_")]


def test_list_is_newest_first_with_question_protocol_models_status_and_outcome():
    first = run_debate("Which river flows through Paris?")
    second = run_debate("Which ocean is the largest?", protocol="solution_counting")
    at = app(TRANSCRIPTS)
    assert listed(at) == [second[:8], first[:8]]
    row = texts(at.get_by_key(f"debate_row_{second[:8]}"))
    for part in ("Which ocean is the largest?", "solution\\_counting", "scripted/apptest", "finished", "Paris"):
        assert part in row


def test_search_covers_turn_text_and_filters_narrow_the_list():
    voting = run_debate("Which river flows through Paris?")
    counting = run_debate("Which ocean is the largest?", protocol="solution_counting")
    at = app(TRANSCRIPTS)
    at.text_input(key="search").set_value("axolotl").run()  # a word only the agents' turns contain
    assert set(listed(at)) == {voting[:8], counting[:8]}
    at.text_input(key="search").set_value("ocean").run()
    assert listed(at) == [counting[:8]]
    at.text_input(key="search").set_value("no-such-word-anywhere").run()
    assert listed(at) == []
    at.text_input(key="search").set_value("").run()
    at.selectbox(key="protocol_filter").set_value("simple_voting").run()
    assert listed(at) == [voting[:8]]
    at.selectbox(key="status_filter").set_value("stopped").run()
    assert listed(at) == []


def test_opened_debate_shows_every_turn_the_decision_and_plots():
    debate_id = run_debate()
    at = open_debate(debate_id)
    turns = Store().turns(debate_id)
    present = keys(at)
    assert {f"turn_{k}" for k in range(len(turns))} <= present and f"turn_{len(turns)}" not in present
    assert {"decision_card", "plot_diversity", "plot_entropy", "plot_votes", "plot_timeline", "usage",
            "export_json", "export_md", "export_csv", "replay_speed", "replay_start"} <= present
    assert "quokka" in texts(at.get_by_key("turn_1"))
    assert texts(at.get_by_key("decision_answer")) == "#### Paris"
    assert [t.value for t in at.get_by_key("decision_card").expander[0].text] == \
        ["Agent 1 thinks about the zebrafinch.\nFinal answer: Paris"]
    assert "resume" not in present  # a finished debate cannot be resumed


def test_reference_and_config_reference_stay_hidden_until_revealed():
    debate_id = run_debate(reference="Marseille-ref")
    at = open_debate(debate_id)
    assert "Marseille-ref" not in texts(at.main)
    at.button(key="reveal_reference").click().run()
    assert "Marseille-ref" in texts(at.get_by_key("reference_revealed"))
    assert "Marseille-ref" in "\n".join(str(c.value) for c in at.code)


def test_annotation_is_stored_shown_on_its_turn_and_searchable():
    debate_id = run_debate()
    other = run_debate("Which ocean is the largest?")
    at = open_debate(debate_id)
    at.selectbox(key="tag_1").set_value("sycophancy")
    at.text_input(key="note_1").set_value("caves in to gannetbird")
    at.button(key="annotate_1").click().run()
    turn = Store().turns(debate_id)[1]
    notes = Store().annotations(debate_id)
    assert [(n["turn_id"], n["tag"], n["note"]) for n in notes] == [(turn.id, "sycophancy", "caves in to gannetbird")]
    shown = texts(at.get_by_key("turn_1"))
    assert "sycophancy" in shown and "gannetbird" in shown
    assert "gannetbird" not in texts(at.get_by_key("turn_0"))
    at.text_input(key="search").set_value("gannetbird").run()
    assert listed(at) == [debate_id[:8]] and other[:8] not in listed(at)


def test_annotate_without_tag_stores_nothing():
    debate_id = run_debate()
    at = open_debate(debate_id)
    at.button(key="annotate_0").click().run()
    assert Store().annotations(debate_id) == []
    assert "tag" in texts(at.get_by_key("turn_0")).lower()


def test_exports_hold_the_whole_debate():
    debate_id = run_debate(reference="Paris")
    store = Store()
    codebook.annotate(store, debate_id, store.turns(debate_id)[0].id, "new argument", "first mention")
    files = export_files(store, debate_id)
    assert set(files) == {"export_json", "export_md", "export_csv", "handout_md", "handout_html"}
    assert callable(files["handout_html"][1]) and callable(files["handout_md"][1])  # built only when clicked
    data = json.loads(files["export_json"][1])
    assert data["format"] == "madlab-debate" and data["debate"]["id"] == debate_id
    assert [t["content"] for t in data["turns"]] == [t.content for t in store.turns(debate_id)]
    assert data["annotations"][0]["tag"] == "new argument"
    markdown = files["export_md"][1]
    assert markdown.startswith("# What is the capital of France?") and "zebrafinch" in markdown
    assert "first mention" in markdown
    rows = list(csv.DictReader(io.StringIO(files["export_csv"][1])))
    assert len(rows) == len(store.turns(debate_id)) and rows[0]["annotations"] == "new argument: first mention"
    assert [f[2] for f in files.values()] == [f"debate-{debate_id[:8]}{ext}" for ext in (
        ".json", ".md", ".csv", "-handout.md", "-handout.html")]
    at = open_debate(debate_id)
    buttons = {b.key: b for b in at.get("download_button")}
    assert set(files) <= set(buttons)  # besides: the plots' and the annotation CSVs' downloads
    assert buttons["export_json"].proto.url.endswith(".json") and buttons["export_csv"].proto.url.endswith(".csv")


def test_fork_prefills_the_debate_page_and_starts_a_linked_debate():
    parent = run_debate()
    at = open_debate(parent)
    turn = Store().turns(parent)[1]
    at.button(key="fork_1").click().run()
    fork = at.session_state["fork_request"]
    assert (fork["parent_id"], fork["seq"], fork["turn_index"]) == (parent, turn.seq, 1)
    at.switch_page(APP).run()  # AppTest stays on the page it was switched to; the browser follows switch_page
    assert f"Forking from debate {parent[:8]} at turn 1" in texts(at.get_by_key("fork_banner"))
    assert at.text_area(key="question").value == "What is the capital of France?"
    assert at.session_state["agent_model_0"] == "scripted/apptest"
    at.button(key="start").click().run()
    child = at.session_state["debate_id"]
    join(child)
    record = Store().get_debate(child)
    assert (record["parent_id"], record["forked_from_seq"], record["status"]) == (parent, turn.seq, "finished")
    inherited = [t.content for t in Store().turns(child) if t.seq <= turn.seq]
    assert inherited == [t.content for t in Store().turns(parent) if t.seq <= turn.seq]
    assert "fork_request" not in at.session_state


def test_a_forked_debate_keeps_its_custom_who_sees_whom_graph():
    graph = {"Agent 1": ["Agent 2"], "Agent 2": [], "Agent 3": ["Agent 1", "Agent 2"]}
    parent = run_debate(connectivity=graph, paradigm="simultaneous")
    at = open_debate(parent)
    at.button(key="fork_0").click().run()
    at.switch_page(APP).run()
    assert at.selectbox(key="connectivity").value == "custom"
    assert "Agent 3 sees Agent 1, Agent 2" in texts(at.main)
    assert DebateConfig.from_dict(form_config(at.session_state)).connectivity == graph
    at.selectbox(key="connectivity").set_value("ring").run()
    assert DebateConfig.from_dict(form_config(at.session_state)).connectivity == "ring"


def test_running_debate_is_listed_first_and_can_be_reattached(gate):
    run_debate()
    running = live.start(config(model=f"scripted/{HELD}"), store=Store(), owner="someone else")
    at = app(TRANSCRIPTS)
    assert f"reattach_{running.debate_id[:8]}" in {b.key for b in at.get_by_key("running_list").button}
    at.button(key=f"reattach_{running.debate_id[:8]}").click().run()
    assert at.session_state["debate_id"] == running.debate_id
    at.switch_page(APP).run()
    assert "running" in texts(at.get_by_key("debate_status"))
    assert len(live.running()) == 1  # watching it did not start another one


def test_interrupted_debate_resumes_in_the_background():
    debate_id = run_debate()
    store = Store()
    store.set_status(debate_id, "interrupted")
    at = open_debate(debate_id)
    at.button(key="resume").click().run()
    assert at.session_state["debate_id"] == debate_id
    join(debate_id)
    assert Store().get_debate(debate_id)["status"] == "finished"


def title(at) -> str:
    return at.get_by_key("debate_title").header[0].value


def _param(at, name: str):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_the_opened_debate_is_in_the_url_and_a_reload_or_pasted_link_opens_it():
    debate_id = run_debate("Which bridge is the oldest in Paris?")
    other = run_debate("Which ocean is the largest?")
    at = open_debate(debate_id)
    assert _param(at, "open") == debate_id
    assert "Which bridge is the oldest in Paris?" == title(at)
    # The list is folded under "Back to the list" while the debate is open.
    assert {"back_to_list", "debate_list_box", "turn_0"} <= keys(at)
    assert at.session_state["debate_list_box"] is False

    # A reload (a new session with the same URL) or a pasted link: the same debate, opened.
    for token in (_param(at, "session"), None):
        reloaded = AppTest.from_file(APP, default_timeout=30)
        if token:
            reloaded.query_params["session"] = token
        reloaded.query_params["open"] = debate_id
        reloaded.run()
        reloaded.switch_page(TRANSCRIPTS).run()
        assert not reloaded.exception, reloaded.exception
        assert "Which bridge is the oldest in Paris?" == title(reloaded)
        assert "quokka" in texts(reloaded.get_by_key("turn_1"))
        # Must not happen: the list alone, nothing opened; or the Debate page's watched debate set by it.
        assert "back_to_list" in keys(reloaded) and "debate_id" not in reloaded.session_state

    at.button(key="back_to_list").click().run()
    assert "open" not in at.query_params and "turn_0" not in keys(at) and "debate_title" not in keys(at)
    assert set(listed(at)) >= {debate_id[:8], other[:8]}


def _running_elsewhere(question: str, reference: str | None = None) -> str:
    """A debate row as another process running it leaves it: status running, its pid (a live process:
    this one's parent), host and a fresh heartbeat; nothing of it in this server's `live`."""
    import os
    import uuid

    store = Store()
    debate_id = uuid.uuid4().hex
    store.create_debate(debate_id, config(question, **({"reference": reference} if reference else {})))
    with store.transaction() as db:
        db.execute("UPDATE debates SET pid = ?, owner = ? WHERE id = ?", [os.getppid(), "cli-host:1:tok", debate_id])
    return debate_id


def test_a_debate_another_process_runs_is_listed_as_running_and_not_steerable_here():
    finished = run_debate("Which river flows through Paris?")
    other = _running_elsewhere("Is 91 a prime number?")
    at = app(TRANSCRIPTS)
    block = texts(at.get_by_key("running_list"))
    assert "Is 91 a prime number?" in block and other[:8] in block
    assert "run by another process: it cannot be steered from here" in block
    assert f"pid {__import__('os').getppid()}" in block and "heartbeat" in block
    # Must not happen: a finished debate in the running block, or the other process's debate attached here.
    assert finished[:8] not in block
    at.button(key=f"reattach_{other[:8]}").click().run()
    assert "debate_id" not in at.session_state and at.session_state["open_debate"] == other
    assert live.get(other) is None


def test_a_running_debate_reads_running_in_the_list_never_a_final_outcome_nor_correctness():
    done = run_debate("Which river flows through Paris?", reference="Paris")
    other = _running_elsewhere("Which ocean is the largest?", reference="Pacific")
    at = app(TRANSCRIPTS)
    row = texts(at.get_by_key(f"debate_row_{other[:8]}"))
    assert "outcome: running" in row
    # Must not happen: a final-sounding outcome for a debate that has not ended.
    assert "no decision" not in row
    assert "outcome: Paris" in texts(at.get_by_key(f"debate_row_{done[:8]}"))
    at.selectbox(key="correctness_filter").set_value("no decision").run()
    assert other[:8] not in listed(at)
    at.selectbox(key="correctness_filter").set_value("not ended yet").run()
    assert listed(at) == [other[:8]]


def test_coded_passages_are_highlighted_in_the_transcript_as_the_viewer_may_see_them():
    """Issue 22 item 2: a coded passage is drawn highlighted wherever the turn is shown. Blind: a
    browser with no coder name sees no highlight (nor the switch); the coder who made it sees it,
    its text drawn literally (the `$` signs stay signs); once the lead reveals, everyone does."""
    from mad_core.qda import coding

    debate_id = run_debate()
    store = Store()
    turn = store.turns(debate_id)[1]
    start = turn.content.index("quokka")
    project_id = coding.create_project(store, "Animals", "Lena", debate_ids=[debate_id])
    lena = coding.join(store, project_id, "Lena")
    omar = coding.join(store, project_id, "Omar")
    code = coding.add_code(store, project_id, "Lena", "Animal $1 & co", colour="#D62728")
    coding.apply_code(store, project_id, omar, debate_id, turn.id, code, start, start + len("quokka"))

    stranger = open_debate(debate_id)
    assert "show_coded_passages" not in keys(stranger)
    assert "-background[" not in texts(stranger.get_by_key("turn_1"))

    omar_page = AppTest.from_file(APP, default_timeout=30)
    omar_page.session_state["coding_coder_name"] = "Omar"
    omar_page.run().switch_page(TRANSCRIPTS).run()
    omar_page.button(key=f"open_{debate_id[:8]}").click().run()
    assert not omar_page.exception
    assert ":red-background[quokka]" in texts(omar_page.get_by_key("turn_1"))
    assert "Coded: :red-background[Animal \\$1 \\& co] (Animals)" in [c.value for c in omar_page.caption]
    omar_page.toggle(key="show_coded_passages").set_value(False).run()
    assert "-background[" not in texts(omar_page.get_by_key("turn_1"))

    coding.reveal(store, project_id, lena)
    revealed = open_debate(debate_id)
    assert ":red-background[quokka]" in texts(revealed.get_by_key("turn_1"))
