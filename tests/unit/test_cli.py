"""The command line (`mad_core.cli.main(argv)`): list, show, export, import, run, resume, and
bad input (exit code 2, a message naming the problem, nothing written)."""
from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from mad_core import exports
from mad_core.cli import main
from mad_core.events import DebateFinished, DecisionReached, Turn, TurnFinished, VoteCast
from mad_core.store import Store, default_db_path, list_debates

CONFIG = {"question": "Is the Moon made of cheese?", "protocol": "simple_voting", "paradigm": "memory",
          "agents": [{"label": "Agent 1", "model": "scripted/echo"}, {"label": "Agent 2", "model": "scripted/echo"}]}


def stored_debate(debate_id: str, question: str, words: str, status: str = "finished") -> str:
    """A small finished debate written through the store, as the engine would."""
    with Store() as store:
        store.create_debate(debate_id, {**CONFIG, "question": question})
        for seq, agent in enumerate(("Agent 1", "Agent 2")):
            store.record(TurnFinished(Turn(id=f"{debate_id}-{seq}", seq=seq, round=1, agent=agent, kind="discussion",
                                           model="scripted/echo", prompt=[], content=f"{agent} says {words}.",
                                           answer="No")))
            store.record(VoteCast(round=1, agent=agent, protocol="simple_voting", raw="1", ballot=0, valid=True))
        store.record(DecisionReached(round=1, protocol="simple_voting", answer="No", winner_agent="Agent 1",
                                     winner_index=0))
        store.record(DebateFinished(status=status, answer="No"))
    return debate_id


@pytest.fixture
def two_debates():
    first = stored_debate("1a" + "0" * 30, "Is the Moon made of cheese?", "basalt rock")
    second = stored_debate("2b" + "0" * 30, "Do owls sleep by day?", "nocturnal birds", status="stopped")
    with Store() as store:
        store.db["debates"].update(first, {"created_at": 100.0})
        store.db["debates"].update(second, {"created_at": 200.0})
    return first, second


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ----- reading ------------------------------------------------------------------------------
def test_list_shows_debates_newest_first(capsys, two_debates):
    first, second = two_debates
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "CREATED", "STATUS", "PROTOCOL", "QUESTION"]
    assert lines[1].startswith(second[:8]) and "stopped" in lines[1] and "Do owls sleep by day?" in lines[1]
    assert lines[2].startswith(first[:8]) and "finished" in lines[2] and "simple_voting" in lines[2]
    assert second not in out  # only a prefix of the id


def test_list_filters_by_status_and_search(capsys, two_debates):
    first, second = two_debates
    _, out, _ = run_cli(capsys, "list", "--status", "finished")
    assert first[:8] in out and second[:8] not in out
    _, out, _ = run_cli(capsys, "list", "--search", "nocturnal")
    assert second[:8] in out and first[:8] not in out
    _, out, _ = run_cli(capsys, "list", "--search", '"AND OR (')
    assert out.strip() == "No debates."


def test_list_truncates_long_questions(capsys):
    stored_debate("3c" + "0" * 30, "Why " + "very " * 40 + "long?", "words")
    _, out, _ = run_cli(capsys, "list")
    line = out.splitlines()[1]
    assert line.endswith("…") and len(line) < 130


def test_show_prints_the_transcript_by_id_prefix(capsys, two_debates):
    first, _ = two_debates
    code, out, _ = run_cli(capsys, "show", first[:4])
    assert code == 0
    assert out.startswith("# Is the Moon made of cheese?")
    assert "Agent 1 says basalt rock." in out and "Agent 2 says basalt rock." in out
    assert "**Decision (simple_voting):** No" in out


@pytest.mark.parametrize("command", ["show", "export", "resume"])
def test_unknown_or_ambiguous_ids_exit_2(capsys, two_debates, command):
    code, out, err = run_cli(capsys, command, "ffff")
    assert code == 2 and out == ""
    assert "no debate with id 'ffff'" in err
    stored_debate("1a" + "1" * 30, "Another?", "words")
    code, _, err = run_cli(capsys, command, "1a")
    assert code == 2 and "ambiguous" in err


# ----- export / import ----------------------------------------------------------------------
def test_export_json_then_import_gives_a_copy(capsys, two_debates, tmp_path):
    first, _ = two_debates
    path = tmp_path / "debate.json"
    code, out, err = run_cli(capsys, "export", first, "--format", "json", "-o", str(path))
    assert code == 0 and out == "" and str(path) in err
    exported = json.loads(path.read_text(encoding="utf-8"))
    assert exported["debate"]["id"] == first and len(exported["turns"]) == 2

    code, out, _ = run_cli(capsys, "import", str(path))  # the id is taken here: a fresh one
    new_id = out.strip()
    assert code == 0 and len(new_id) == 32 and new_id != first
    with Store() as store:
        copy = exports.export_debate(store, new_id)
    assert copy["debate"].pop("id") == new_id
    exported["debate"].pop("id")
    assert copy == exported


def test_import_keeps_the_id_in_a_fresh_database(capsys, two_debates, tmp_path):
    first, _ = two_debates
    path = tmp_path / "debate.json"
    run_cli(capsys, "export", first, "-o", str(path))
    other_db = tmp_path / "other.db"
    code, out, _ = run_cli(capsys, "--db", str(other_db), "import", str(path))
    assert code == 0 and out.strip() == first
    code, out, _ = run_cli(capsys, "--db", str(other_db), "import", str(path), "--new-id")
    assert code == 0 and out.strip() != first
    with Store(other_db) as store:
        assert store.db["debates"].count == 2


def test_export_markdown_and_csv_to_stdout(capsys, two_debates):
    first, _ = two_debates
    code, out, _ = run_cli(capsys, "export", first[:3], "--format", "md")
    assert code == 0 and "## Round 1" in out and "Agent 2 says basalt rock." in out
    code, out, _ = run_cli(capsys, "export", first[:3], "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["content"] for r in rows] == ["Agent 1 says basalt rock.", "Agent 2 says basalt rock."]


@pytest.mark.parametrize("content, message", [
    (None, "cannot read: No such file or directory"),
    ("{not json", "not JSON: Expecting property name"),
    ('{"format": "madlab-debate", "version": 1}', "debate: missing"),
    ('{"format": "other"}', "format: not a MAD Lab debate export"),
])
def test_import_of_a_bad_file_exits_2(capsys, tmp_path, content, message):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, out, err = run_cli(capsys, "import", str(path))
    assert code == 2 and out == "" and err == f"error: {path}: {message}" + err.split(message, 1)[1]
    assert err.count("\n") == 1 and not default_db_path().exists()


# ----- run: bad input -----------------------------------------------------------------------
@pytest.mark.parametrize("settings, extra, field", [
    ("question: Why?\nrounds: 0\n", [], "rounds"),
    ("question: Why?\nrouns: 2\n", [], "rouns"),
    ("question: Why?\nprotocol: coin_flip\n", [], "protocol"),
    ("question: Why?\n", ["--model", "nonsense"], "agents[0].model"),
    ("question: Why?\n", ["--agents", "0"], "agents"),
    ("rounds: 1\n", [], "question"),
    ("- just\n- a list\n", [], "config"),
    ("question: [unclosed\n", [], "config"),
])
def test_bad_settings_exit_2_naming_the_field_and_write_nothing(capsys, tmp_path, settings, extra, field):
    path = tmp_path / "debate.yaml"
    path.write_text(settings, encoding="utf-8")
    code, out, err = run_cli(capsys, "run", "--config", str(path), *extra)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {field}: ")
    assert not default_db_path().exists()


def test_missing_config_file_exits_2(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", "--config", str(tmp_path / "nope.yaml"))
    assert code == 2 and err.startswith("error: config: ") and "cannot read: No such file" in err
    assert not default_db_path().exists()


@pytest.mark.parametrize("flags, field", [
    (["--rounds", "100000000000000000000"], "rounds"),
    (["--max-rounds", "100000000000000000000"], "max_rounds"),
    (["--seed", "100000000000000000000"], "seed"),
    (["--seed", "-1"], "seed"),
    (["--tit-for-tat", "100000000000000000000"], "tit_for_tat"),
    (["--agents", "100000000000000000000"], "agents"),
    (["--agents", "33"], "agents"),
    (["--rounds", "9" * 5000], "rounds"),  # too many digits even to read as a number
    (["--rounds", "three"], "rounds"),
    (["--agents", "many"], "agents"),
    (["--question", "x" * 100_001], "question"),
    (["--question", "bad \udcff byte"], "question"),  # how Python reads a non-UTF-8 argument
    (["--protocol", "x" * 10_000], "protocol"),
])
def test_bad_run_flags_exit_2_in_one_line_and_write_nothing(capsys, flags, field):
    code, out, err = run_cli(capsys, "run", "--question", "Why?", "--model", "scripted/echo", *flags)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {field}: ") and err.count("\n") == 1 and len(err) < 600
    assert not default_db_path().exists()


@pytest.mark.parametrize("flags, message", [
    (["--limit", "100000000000000000000"], "limit: must be a whole number from 1 to 10,000"),
    (["--limit", "0"], "limit: must be a whole number from 1 to 10,000"),
    (["--limit", "ten"], "limit: must be a whole number from 1 to 10,000, got 'ten'"),
    (["--search", "x" * 100_000], "search: at most 1,000 characters, got 100,000"),
    (["--search", "bad \udcff byte"], "search: not valid UTF-8 text"),
])
def test_list_refuses_absurd_flags(capsys, two_debates, flags, message):
    code, out, err = run_cli(capsys, "list", *flags)
    assert code == 2 and out == "" and err == f"error: {message}" + err.split(message, 1)[1]
    code, out, _ = run_cli(capsys, "list", "--limit", "10000", "--search", "x" * 1000)
    assert code == 0 and out.strip() == "No debates."


def test_ids_writes_and_databases_that_cannot_work_exit_2(capsys, two_debates, tmp_path):
    first, _ = two_debates
    code, _, err = run_cli(capsys, "show", "a" * 100_000)
    assert code == 2 and err.startswith("error: id: at most 128 characters")
    code, _, err = run_cli(capsys, "export", first, "-o", str(tmp_path / "no" / "such" / "dir.json"))
    assert code == 2 and err.startswith("error: cannot write ") and "No such file or directory" in err
    not_a_db = tmp_path / "text.db"
    not_a_db.write_text("just text, not SQLite " * 100, encoding="utf-8")
    code, _, err = run_cli(capsys, "--db", str(not_a_db), "list")
    assert code == 2 and err.startswith("error: db: cannot open ") and "not a database" in err


def test_flags_override_the_file(tmp_path):
    from mad_core.cli import build_parser, config_from_args

    path = tmp_path / "debate.json"
    path.write_text(json.dumps({**CONFIG, "rounds": 0, "seed": 3}), encoding="utf-8")
    args = build_parser().parse_args(["run", "--config", str(path), "--rounds", "2", "--max-rounds", "4",
                                      "--question", "Why?", "--agents", "3", "--tit-for-tat", "1",
                                      "--ordering", "random"])
    cfg = config_from_args(args)
    assert (cfg.question, cfg.rounds, cfg.max_rounds, cfg.seed, cfg.tit_for_tat, cfg.ordering) == (
        "Why?", 2, 4, 3, 1, "random")
    assert [(a.label, a.model) for a in cfg.agents] == [("Agent 1", "scripted/echo"), ("Agent 2", "scripted/echo"),
                                                        ("Agent 3", "scripted/echo")]
    args = build_parser().parse_args(["run", "--question", "Why?", "--model", "scripted/echo"])
    assert [a.model for a in config_from_args(args).agents] == ["scripted/echo"] * 3


# ----- run and resume with the scripted model -----------------------------------------------
RUN = ["run", "--question", "What is 2+2?", "--model", "scripted/echo", "--agents", "2", "--rounds", "1",
       "--protocol", "simple_voting"]


def test_run_streams_votes_and_decision_and_stores_the_debate(capsys):
    code, out, _ = run_cli(capsys, *RUN)
    assert code == 0
    assert "\n[Agent 1] Question: What is 2+2?" in out and "\n[Agent 2] Question: What is 2+2?" in out
    assert "vote Agent 1: solution" in out and "vote Agent 2: solution" in out
    assert "== Decision (simple_voting, round 1): " in out
    with Store() as store:
        (debate,) = list_debates(store)
        assert debate["status"] == "finished" and debate["question"] == "What is 2+2?"
        assert debate["id"] in out and debate["answer"] and debate["answer"] in out
        turns = store.turns(debate["id"])
        assert {t.agent for t in turns} == {"Agent 1", "Agent 2"} and all(t.status == "ok" for t in turns)
        assert len(store.votes(debate["id"])) == 2
        assert [d["answer"] for d in store.decisions(debate["id"]) if d["final"]] == [debate["answer"]]


def test_ctrl_c_stops_the_debate_gracefully(capsys, monkeypatch):
    from mad_core.controller import Controller
    from mad_core.models.scripted import Script, register_script, unregister_script

    stopped = threading.Event()
    stop = Controller.stop
    monkeypatch.setattr(Controller, "stop", lambda self: (stop(self), stopped.set()))
    calls = []
    lock = threading.Lock()

    def reply(messages, info):
        with lock:
            calls.append(info)
            first = len(calls) == 1
        if first:
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)  # Ctrl-C while Agent 1 speaks
        assert stopped.wait(10), "Ctrl-C did not reach the controller"
        return "4"

    register_script("ctrlc", Script(replies=reply))
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN when the tests run as a background job
    try:
        code, out, err = run_cli(capsys, *[a if a != "scripted/echo" else "scripted/ctrlc" for a in RUN])
    finally:
        unregister_script("ctrlc")
    assert code == 130 and "Stopping the debate" in err
    assert "Debate stopped." in out and "Decision" not in out
    assert signal.getsignal(signal.SIGINT) is before  # the handler it found is put back
    with Store() as store:
        (debate,) = list_debates(store)
        assert debate["status"] == "stopped"
        assert store.votes(debate["id"]) == [] and store.decisions(debate["id"]) == []


def test_a_second_ctrl_c_stops_at_once_and_leaves_no_engine_thread(capsys, monkeypatch):
    from mad_core.cli import Printer
    from mad_core.events import TokenReceived

    show = Printer.__call__

    def interrupted(self, event):
        if isinstance(event, TokenReceived):
            raise KeyboardInterrupt  # as the default handler does on a second Ctrl-C
        show(self, event)

    monkeypatch.setattr(Printer, "__call__", interrupted)
    code, out, err = run_cli(capsys, *RUN)
    assert code == 130 and "Debate stopped." in err
    assert not [t for t in threading.enumerate() if t.name.startswith("madlab-debate")]
    with Store() as store:
        (debate,) = list_debates(store)
        assert debate["status"] == "stopped" and store.decisions(debate["id"]) == []


def test_resume_finishes_an_interrupted_debate(capsys):
    code, out, _ = run_cli(capsys, *RUN)
    with Store() as store:
        (debate,) = list_debates(store)
        debate_id = debate["id"]
        kept = [t for t in store.turns(debate_id) if t.kind == "discussion"]
        # Pretend the process died after the discussion round.
        for turn in store.turns(debate_id):
            if turn.kind != "discussion":
                store.db["turns"].delete_where("turn_id = ?", [turn.id])
        store.db["debates"].update(debate_id, {"status": "interrupted", "answer": None})
    code, out, _ = run_cli(capsys, "resume", debate_id[:6])
    assert code == 0 and "resumed" in out and "== Decision (simple_voting" in out
    with Store() as store:
        debate = store.get_debate(debate_id)
        assert debate["status"] == "finished" and debate["answer"]
        assert [t for t in store.turns(debate_id) if t.kind == "discussion"] == kept  # not asked again
        assert len(store.votes(debate_id)) == 2  # replayed votes are not doubled
        assert sum(d["final"] for d in store.decisions(debate_id)) == 1


def test_resume_refuses_a_running_debate(capsys):
    stored_debate("4d" + "0" * 30, "Still going?", "words", status="running")
    code, out, err = run_cli(capsys, "resume", "4d")
    assert code == 2 and out == "" and "still running" in err


def test_python_dash_m_runs_the_cli_without_streamlit(tmp_path):
    env = {**os.environ, "MADLAB_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "mad_core", "list"], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert done.returncode == 0 and done.stdout.strip() == "No debates."
    check = "import sys, mad_core.cli, mad_core.store; assert 'streamlit' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", check], env=env).returncode == 0


@pytest.mark.parametrize("how", ["preset", "config"])
def test_a_preset_runs_by_name_or_by_its_file(capsys, how):
    from mad_core.presets import PRESET_DIR, load_presets

    argv = ["--preset", "du_simultaneous"] if how == "preset" else ["--config", str(PRESET_DIR / "du_simultaneous.yaml")]
    code, _, err = run_cli(capsys, "run", *argv, "--model", "scripted/echo", "--rounds", "1", "--max-rounds", "1")
    assert code == 0, err
    (debate,) = list_debates(Store())
    config = Store().get_debate(debate["id"])["config"]
    wanted = load_presets()["du_simultaneous"]["config"]
    assert config["question"] == wanted["question"] and config["paradigm"] == wanted["paradigm"]
    assert len(config["agents"]) == len(wanted["agents"]) and "title" not in config


def test_unknown_preset_exits_2_naming_the_presets(capsys):
    code, _, err = run_cli(capsys, "run", "--preset", "nope")
    assert code == 2 and err.startswith("error: preset: unknown preset 'nope'") and "du_simultaneous" in err
    assert not default_db_path().exists()
