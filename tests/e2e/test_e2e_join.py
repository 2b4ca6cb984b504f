"""The class joins by code in a browser: the teacher opens a poll on the presenter, two phone-sized
contexts type its code and a nickname on /join and predict, one reloads and keeps nickname and
prediction, the teacher reveals and the stage's bar chart shows the counts; a third phone with the
now retired code is told so under the code field. Must not happen: the late phone let in."""
from __future__ import annotations

import re

import pytest
from e2e_helpers import click, expect, expect_no_exception, wait_for_idle
from e2e_helpers import key as by_key
from test_e2e_classroom import open_sidebar, poll_opened_on_the_third_turn, step_to_the_decision

pytestmark = pytest.mark.e2e
PHONE = {"width": 500, "height": 900}  # as test_e2e_classroom's phones (narrower, the sidebar overlays the page)

# The plotly figure's traces as drawn in the browser (plotly keeps them on its graph div).
CHART_DATA = """() => {
  const plot = document.querySelector('.st-key-poll_chart .js-plotly-plot');
  return plot && plot.data ? plot.data.map(t => [t.name, Array.from(t.x), Array.from(t.y)]) : null;
}"""


def phone_joins(browser, contexts: list, url: str, code: str, nickname: str):
    """A new phone-sized context (kept in `contexts`, closed by the caller) whose page typed `code` and
    `nickname` on /join; its page."""
    context = browser.new_context(viewport=PHONE)
    contexts.append(context)
    phone = context.new_page()
    join_on(phone, url, code, nickname)
    return phone


def join_on(phone, url: str, code: str, nickname: str) -> None:
    phone.goto(f"{url}/join")
    wait_for_idle(phone, timeout=60_000)
    by_key(phone, "join_code").locator("input").fill(code)
    by_key(phone, "join_nickname").locator("input").fill(nickname)
    by_key(phone, "join_nickname").locator("input").press("Tab")
    wait_for_idle(phone)
    click(phone, "join_send")


def test_two_phones_join_by_code_predict_reload_and_see_the_chart_after_the_reveal(page, server, script, browser):
    poll_opened_on_the_third_turn(page, server, script, "Join check: which city?")
    code = re.search(r"`?([A-Z0-9]{6})`?\s*$", by_key(page, "poll_code").inner_text().strip()).group(1)
    expect(by_key(page, "poll_teacher_code")).to_contain_text(code)
    contexts = []
    try:
        phones = []
        for nickname, choice in (("Ada", "Lyon"), ("Bo", "Paris")):
            typed = code.lower()[:3] + "-" + code.lower()[3:]  # typed loosely
            phone = phone_joins(browser, contexts, server.url, typed, nickname)
            expect(by_key(phone, "poll_nickname")).to_contain_text(f"You are {nickname}")
            phone.get_by_role("radio", name=choice).check(force=True)
            wait_for_idle(phone)
            click(phone, "poll_predict")
            expect(by_key(phone, "poll_mine")).to_contain_text(f"({nickname}): {choice}")
            phones.append(phone)
        expect(by_key(page, "class_joined")).to_contain_text("Ada, Bo", timeout=30_000)
        expect(by_key(page, "poll_count")).to_contain_text("2 predictions", timeout=30_000)
        ada = phones[0]
        ada.reload()  # the device and the poll are in the link: the same student, no form
        wait_for_idle(ada, timeout=60_000)
        expect(by_key(ada, "poll_nickname")).to_contain_text("You are Ada")
        expect(by_key(ada, "poll_mine")).to_contain_text("(Ada): Lyon")
        expect(by_key(ada, "join_code")).to_have_count(0)

        step_to_the_decision(page)  # the decision closes the poll and retires its code
        expect(by_key(page, "poll_code")).to_have_count(0)
        open_sidebar(page)
        click(page, "poll_reveal")
        expect(by_key(page, "poll_chart")).to_be_visible()
        page.wait_for_function(f"() => ({CHART_DATA})() !== null", timeout=20_000)
        assert page.evaluate(CHART_DATA) == [["Class", ["✅ Paris", "Lyon", "Something else"], [1, 1, 0]],
                                             ["Agents", ["✅ Paris", "Lyon", "Something else"], [2, 1, 0]]]
        expect(by_key(page, "poll_agent_answer_2")).to_contain_text("Agent 3: Lyon")
        expect(by_key(ada, "poll_results")).to_contain_text("Predicted right: 1 of 2 · Bo")

        stranger = phone_joins(browser, contexts, server.url, code, "Cy")
        expect(by_key(stranger, "join_code_error")).to_contain_text("the code of a closed poll no longer works")
        # Must not happen: the late phone let in, or counted.
        expect(by_key(stranger, "poll_choice")).to_have_count(0)
        expect(by_key(page, "class_joined")).not_to_contain_text("Cy")
        expect_no_exception(page)
    finally:
        for context in contexts:
            context.close()
