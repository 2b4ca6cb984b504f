import time, pytest
import e2e_helpers as h
from e2e_helpers import *
from e2e_scripts import words
pytestmark = pytest.mark.e2e
def test_prof(page, server, store):
    t=time.time(); lap=lambda m: print(f"{m}: {time.time()-t:.1f}", flush=True)
    open_debate_page(page, server.url); lap("open")
    question = unique("Steering check: what colour is the sky?")
    configure_debate(page, question, ["scripted/steer"] * 3); lap("configured")
    start(page); lap("started")
    expect(turn(page, 0)).to_contain_text(words("ta", 30)[1], timeout=LIVE_TIMEOUT); lap("turn0")
    message = unique("Please consider sunsets")
    choose(page, "say_one_agent", "Agent 3"); lap("chosen")
    fill(page, "say_one_text", message); lap("filled")
    click(page, "say_one_send"); lap("clicked")
    expect(key(page, "steer_0")).to_be_visible(); lap("steer shown")
    expect(turn(page, 2)).to_be_visible(timeout=60000); lap("turn2")
    expect_status(page, "finished", timeout=90_000); lap("finished")
    expect(open_disclosure(page, "prompt_2")).to_contain_text(message); lap("prompt2")
    for k in (0, 1):
        shown = open_disclosure(page, f"prompt_{k}")
        expect(shown).to_contain_text(question); lap(f"prompt{k}")
