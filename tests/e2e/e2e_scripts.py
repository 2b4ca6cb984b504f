"""Scripted models of the e2e tests (written to the MADLAB_SCRIPTS file by conftest).

Each scripted model keeps state in the server process (replies are consumed in call order),
so each test uses its own script and runs one debate on it, except the fork test, whose
forked debate continues on the same script: its list then repeats its last reply, "1",
which is valid as a discussion turn, an extraction and a vote.
"""
from __future__ import annotations


def words(tag: str, n: int) -> list[str]:
    """n distinct words `<tag>w01 ...`; no word is a substring of another (two-digit numbers)."""
    return [f"{tag}w{i:02d}" for i in range(1, n + 1)]


def reply(tag: str, n: int, answer: str = "42") -> str:
    """A discussion reply of n distinct words that ends with the line the engine asks for."""
    return " ".join(words(tag, n)) + f"\n\nFinal answer: {answer}"


def debate_script(discussion: list[str], n_agents: int, answer: str = "42", **pacing) -> dict:
    """Replies in call order for a one-round simple-voting debate without consensus tracking.

    Calls come as: the discussion turns (one after another), then one extraction per agent,
    then one vote per agent. Extraction and vote replies are the same for every agent, so
    the order of those concurrent calls does not matter; the list then repeats "1" forever.
    """
    return {"replies": [*discussion, *([answer] * n_agents), "1"], **pacing}


STEER_BALLOT = "I vote for solution 1 after weighing every argument made here today. "  # 12 pieces

XSS_TEXT = 'Look: <script>window.__xss=1</script> and <img src=x onerror="window.__xss=2"> done'
LONG_NUMBER = "1303211111232111133445678" + "9" * 140  # a decision a small model gave (researcher's trial)
HANDOUT_TEXT = 'Print me: <script>alert("h1")</script> and <img src=x onerror="alert(\'h2\')"> & <b>bold</b>'

SCRIPTS: dict[str, dict] = {
    # 1. streaming: ~30 words per reply at 0.2 s per piece (about 6 s per turn): after the 3rd
    #    word shows, more than 5 s of text is still to come even on a loaded machine.
    "stream": debate_script([reply("sa", 30), reply("sb", 30), reply("sc", 30)], 3, token_delay=0.2),
    # 2. stop mid-turn: 30 words at 0.3 s (9 s per turn) leaves a wide window to press Stop.
    "slow": debate_script([reply("la", 30), reply("lb", 30), reply("lc", 30)], 3, token_delay=0.3),
    # 3. message to one agent: 6 s per turn; agent 3 speaks ~12 s after agent 1 starts.
    "steer": debate_script([reply("ta", 30), reply("tb", 30), reply("tc", 30)], 3, token_delay=0.2),
    # 4. XSS: model text full of markup, fast.
    "xss": debate_script([XSS_TEXT + "\n\nFinal answer: 1", XSS_TEXT + "\n\nFinal answer: 1"], 2, answer="1"),
    # 5. fork: fast, three agents; the fork's own calls get the repeated "1".
    "forkme": debate_script([reply("fa", 8), reply("fb", 8), reply("fc", 8)], 3, token_delay=0.01),
    # 5b. fork with moderator messages (test_e2e_fork.py): the parent runs in the test's process (its
    #     messages said at known points); here, the fork's own calls: Agent 3's turn, then "1".
    "fork_msg": {"replies": [reply("fm", 6, "100"), "100", "100", "100", "1"]},
    # 5c. fork from far down a transcript (test_e2e_fork.py): the parent runs in the test's process; the
    #     fork's first turn takes about 3 s (its note is checked while it runs), then "1" for every call.
    "fork_top": {"replies": [reply("ft", 20, "1"), "1"], "token_delay": 0.15},
    # 6. experiments (test_e2e_experiments.py): each agent always gives the same answer, whatever the
    #    call, so concurrent debates need no call order; the judge always picks Agent 1 ("yes").
    "exp_e2e": {"replies": {"Agent 1": ["Final answer: yes"], "Agent 2": ["Final answer: no"],
                            "Agent 3": ["Final answer: no"]}},
    "exp_e2e_judge": {"replies": ["Agent 1"]},
    # ~5 s a turn (16 pieces at 0.3 s), ~15 s a debate: a loaded machine still reloads, opens and stops the
    # sweep while it runs (at 1 s a turn the four debates were over first).
    "exp_e2e_slow": {"replies": {"Agent 1": [reply("sa", 12, "yes")], "Agent 2": [reply("sb", 12, "no")],
                                 "Agent 3": [reply("sc", 12, "no")]}, "token_delay": 0.3},
    # 7. reload (test_e2e_reload.py): 12 s per turn, so the debate still runs through a fresh tab,
    #    a reload and a second tab.
    "reload": debate_script([reply("ra", 30), reply("rb", 30), reply("rc", 30)], 3, token_delay=0.4),
    # 8. projector viewport: long replies (more than the transcript box holds), 12 s per turn.
    "projector": debate_script([reply("pa", 120), reply("pb", 120), reply("pc", 120)], 3, token_delay=0.1),
    # 9. steering timings (test_e2e_steering.py): Agent 1 gives a slow discussion reply (9 s), an
    #    extraction and a slow ballot (4 s; "solution 1" is valid however many solutions there are);
    #    the decision is forced while Agent 1 speaks, so the others are only asked for ballots.
    "steering": {"replies": {"Agent 1": [reply("g1", 30), "42", STEER_BALLOT], "Agent 2": [STEER_BALLOT],
                             "Agent 3": [STEER_BALLOT]}, "token_delay": 0.3},
    # 10. Stop while the votes stream: short discussion turns, then 29 s ballots (Stop cuts them).
    "steering_stop": {"replies": {f"Agent {i}": [reply(f"h{i}", 6), "42", STEER_BALLOT * 8] for i in (1, 2, 3)},
                      "token_delay": 0.3},
    # 10c. steering on a projector (test_e2e_steering.py, 1280x720): 12 s per turn, stopped early.
    "steering_projector": debate_script([reply("va", 40), reply("vb", 40), reply("vc", 40)], 3, token_delay=0.3),
    # 10b. steering from another tab (test_e2e_steering.py): 12 s per turn, stopped early.
    "steering_elsewhere": debate_script([reply("ea", 40), reply("eb", 40), reply("ec", 40)], 3, token_delay=0.3),
    # 10d. Pause right after Start (test_e2e_steering.py): 12 s per turn, stopped early.
    "steering_first": debate_script([reply("fa", 40), reply("fb", 40), reply("fc", 40)], 3, token_delay=0.3),
    # 11. Presenter view, live (test_e2e_classroom.py): 40 words at 0.25 s, 10 s per turn, so the
    #     first agent is still speaking when the presenter page has loaded.
    "present": debate_script([reply("pa", 40), reply("pb", 40), reply("pc", 40)], 3, token_delay=0.25),
    # 12. handout (test_e2e_handout.py): markup in every reply; per agent, so call order does not matter.
    "handout": {"replies": {"Agent 1": [HANDOUT_TEXT + "\n\nFinal answer: 42", "42", "1"],
                            "Agent 2": [HANDOUT_TEXT + "\n\nFinal answer: 41", "41", "1"]}},
    # 13. the form (test_e2e_form.py): per agent a discussion turn, an extraction, then "1" forever
    #     (valid as a turn, an extraction and a vote), so the short debates of that file share it;
    #     "form_slow" runs long enough to try Start again while it runs.
    "form_e2e": {"replies": {f"Agent {i}": ["Final answer: 42", "42", "1"] for i in (1, 2)}},
    # a person's seat (test_e2e_seat.py): Agent 1's turn, its extraction, its ballot (Agent 2 is the person)
    "seat_e2e": {"replies": {"Agent 1": ["Final answer: 42", "42", "1"]}},
    "form_slow": {"replies": {"Agent 1": [reply("fs", 60)], "Agent 2": [reply("ft", 60)]}, "token_delay": 0.3},
    # 14. readable charts (test_e2e_charts.py): long answers a small model gives, per agent; one
    #     script per window size.
    **{f"charts_e2e_{width}": {"replies": {
        "Agent 1": ["Final answer: " + LONG_NUMBER, LONG_NUMBER, "1"],
        "Agent 2": ["Final answer: The task is to verify that 91 must be yes but it exceeds",
                    "The task is to verify that 91 must be yes but it exceeds", "1"],
        "Agent 3": ['Final answer: A person asked you, "How many 7s are there?" and you said',
                    'A person asked you, "How many 7s are there?" and you said', "1"]}} for width in (1280, 1440)},
    # 16. a long question and long turns (test_e2e_hostile_text.py, 1280x720): 400 words at 0.05 s (20 s a
    #     turn), far longer than the transcript box holds, so the speaker's header must stick while it streams.
    "hostile_live": debate_script([reply("hla", 400), reply("hlb", 400)], 2, token_delay=0.05),
    # 15. line breaks in model text (test_e2e_line_breaks.py): one reply on two lines, per agent.
    "line_breaks": {"replies": {f"Agent {i}": ["even better yet in future\nThe correct answer is 42\n\nFinal answer: 42",
                                               "42", "1"] for i in (1, 2)}},
}
