import time, pytest
import e2e_helpers as h
pytestmark = pytest.mark.e2e
def test_prof(page, server):
    t=time.time(); lap=lambda m: print(f"{m}: {time.time()-t:.1f}")
    h.open_debate_page(page, server.url); lap("open")
    h.set_text(page, "question", h.unique("prof q")); lap("question")
    h.set_number(page, "n_agents", 3); lap("n_agents")
    for i in range(3):
        h.choose(page, f"agent_model_{i}", "scripted/xss"); lap(f"model{i}")
    h.set_number(page, "rounds", 1); lap("rounds")
    h.set_number(page, "max_rounds", 1); lap("max_rounds")
    h.start(page); lap("start")
    h.expect_status(page, "finished"); lap("finished")
