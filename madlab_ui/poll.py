"""The prediction poll's UI: the teacher's controls, the poll on the presenter's stage, and the page
students open on their own devices (`/Poll?poll=<id>`).

- Teacher (presenter sidebar): `poll_question`, `poll_options` (one answer per line; `poll_fill`
  puts the agents' current answers there, read with the debate's answer type: "yes", "no", not
  their whole replies), `poll_open` (only before the decision is shown; once it is shown the poll
  takes no more predictions: `close_on_decision`),
  `poll_close`, `poll_reveal` (only once the decision is shown, so the results never spoil it),
  and a prediction recorded on a student's behalf (`poll_proxy_voter`, `poll_proxy_option`,
  `poll_proxy_send`).
- Stage (`poll_stage`, a compact band in the presenter's screen): the question and how many
  predictions are in (`poll_count`: open / closed / closed because the debate decided) on one
  line, while open the link's QR code for phones (`poll_qr`, segno) beside the plain link in big
  type that never breaks inside (`poll_link`), and, only after the reveal, one short line per
  answer with its count (`poll_result_{i}`, the decision marked) and one line of who predicted
  right (`poll_right`), inside `poll_results`. It refreshes itself every POLL_REFRESH_S.
- Student page: `poll_id_input` when the URL has no poll, `poll_debate_question`, `poll_voter` (name; empty = this
  device's token), `poll_choice`, `poll_predict` (while open; once the debate decided the page says the poll
  closed because of it, and a late send is refused by `mad_core.polls`), `poll_mine` (your prediction), `poll_results` (after the
  reveal: `poll_decision`, what the debate decided, then the table where every answer's decision cell says
  whether it is the decision, and a row for the decided answer when it is none of the poll's answers).

Counts are never drawn before the reveal: `mad_core.polls.results` does not even return them.
What it must not do: write the store except through `mad_core.polls`, or render user or model
text as HTML (options, names and questions are markdown-escaped or plain text).
"""
from __future__ import annotations

import io
from urllib.parse import urlsplit, urlunsplit

import segno
import streamlit as st

from mad_core import handout, polls
from mad_core.polls import PollError
from mad_core.view import DISCUSSION_KINDS, DebateView

from . import network
from .common import POLL_VOTER, md_escape, open_store, owner_id

POLL_REFRESH_S = 2.0
QR_PX = 120  # the QR code on the stage: a phone reads it across a classroom from a projector
STAGE_ROWS = 4  # answers listed on the stage after the reveal (the rest summed up in one line)
STAGE_OPTION_CHARS = 32  # an answer on the stage's results (its whole text is on the students' page)
POLL_PAGE = "Poll"  # the students' page's URL path (madlab_ui/navigation.py)
NOTICE = "poll_notice"  # session key: (kind, message) shown once after a poll action


def current_poll(store, debate_id: str) -> dict | None:
    """The debate's newest poll."""
    found = polls.polls_of(store, debate_id)
    return found[0] if found else None


def poll_url(poll_id: str) -> str:
    """The plain link students type: this server, the Poll page, the poll id (no session token)."""
    return poll_link(poll_id)[0]


def poll_link(poll_id: str) -> tuple[str, bool]:
    """(poll_url, whether a student's device can follow it): a teacher's localhost address becomes
    this machine's network address (`madlab_ui.network`), as Streamlit's own "Network URL"."""
    try:
        here = urlsplit(st.context.url or "")
    except Exception:  # noqa: BLE001 - no browser context (tests): a relative link still works
        here = None
    if not here or not here.netloc:
        return f"/{POLL_PAGE}?poll={poll_id}", True
    base = here.path.rsplit("/", 1)[0] if here.path.count("/") > 1 else ""
    netloc, reachable = network.student_netloc(here.netloc)
    return urlunsplit((here.scheme, netloc, f"{base}/{POLL_PAGE}", f"poll={poll_id}", "")), reachable


def _notice() -> None:
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        (st.error if notice[0] == "error" else st.success)(notice[1])


def _act(action, *args, done: str = "") -> None:
    """Run a poll action from a callback; refusals become a notice naming the field."""
    try:
        action(open_store(), *args)
    except PollError as exc:
        st.session_state[NOTICE] = ("error", str(exc))
    else:
        if done:
            st.session_state[NOTICE] = ("ok", done)


# ----- teacher ----------------------------------------------------------------------------------
def current_answers(view: DebateView) -> list[str]:
    """The agents' current answers (each one's latest finished discussion reply, read with the
    debate's answer type as the metric report reads it) as poll options."""
    replies: dict[str, str] = {}
    for turn in view.turns:
        if turn.kind in DISCUSSION_KINDS and turn.status == "ok" and turn.text:
            replies[turn.agent] = turn.text
    return polls.agent_options(replies, view.config)


def close_on_decision(debate_id: str, view: DebateView) -> None:
    """The decision is on the screen (a live debate's, or a replay that reached it): the poll stops
    taking predictions (a live debate's poll is closed by the store already)."""
    if view.decision is None:
        return
    poll = current_poll(open_store(), debate_id)
    if poll is not None and poll["status"] == "open":
        polls.close_on_decision(open_store(), poll["id"])


def _fill(view: DebateView) -> None:
    st.session_state["poll_options"] = "\n".join(current_answers(view))


def _open(debate_id: str) -> None:
    lines = (st.session_state.get("poll_options") or "").splitlines()
    _act(polls.open_poll, debate_id, lines, st.session_state.get("poll_question") or "", done="Poll opened.")


def _proxy(poll_id: str) -> None:
    _act(polls.predict, poll_id, st.session_state.get("poll_proxy_voter") or "",
         st.session_state.get("poll_proxy_option"), done="Prediction recorded.")
    if st.session_state.get(NOTICE, ("",))[0] == "ok":
        st.session_state["poll_proxy_voter"] = ""


def render_teacher(debate_id: str, view: DebateView) -> None:
    """The teacher's poll controls (for the presenter's sidebar)."""
    store = open_store()
    poll = current_poll(store, debate_id)
    decided = view.decision is not None
    st.subheader("Prediction poll")
    _notice()
    if poll is not None and poll["status"] != "revealed":
        st.caption(f"Poll `{poll['id']}` is **{STATUS_WORDS[poll['status']]}**.")
        st.selectbox("Record for a student", poll["options"], key="poll_proxy_option")
        st.text_input("Student's name", key="poll_proxy_voter", placeholder="name")
        st.button("Record prediction", key="poll_proxy_send", on_click=_proxy, args=(poll["id"],),
                  disabled=poll["status"] != "open", width="stretch")
        left, right = st.columns(2)
        left.button("Close", key="poll_close", on_click=_act, args=(polls.close, poll["id"]),
                    kwargs={"done": "Predictions closed."}, disabled=poll["status"] != "open", width="stretch")
        right.button("Reveal", key="poll_reveal", on_click=_act, args=(polls.reveal, poll["id"]),
                     disabled=not decided, width="stretch",
                     help="Show the counts and who predicted right (once the decision is shown).")
        if not decided:
            st.caption("Reveal becomes possible once the decision is shown.")
        return
    if decided:
        st.caption("The decision is shown: a new poll would come too late.")
        return
    st.session_state.setdefault("poll_options", "\n".join(current_answers(view)))
    st.text_input("Question", value=polls.DEFAULT_QUESTION, key="poll_question")
    st.text_area("Answers to choose from (one per line)", key="poll_options", height=120)
    st.button("Use the agents' current answers", key="poll_fill", on_click=_fill, args=(view,), width="stretch")
    st.button("Open poll", key="poll_open", type="primary", on_click=_open, args=(debate_id,), width="stretch")


# ----- results (stage and student page) ---------------------------------------------------------
DECIDED_MARK = "✅ the decision"
NOT_DECIDED_MARK = "✗ not the decision"
STATUS_WORDS = {"open": "open", "closed": "closed", "decided": "closed: the debate decided", "revealed": "revealed"}


def decided_line(result: dict) -> str:
    """What the debate decided, in one markdown line (its answer cut to a headline), and whether
    it is one of the poll's answers."""
    decision = result["decision"]
    if decision is None:
        return "**No decision** was reached: nobody predicted right."
    matched = any(polls.matches(option, decision) for option in result["counts"])
    return (f"**The debate decided:** {md_escape(handout.headline_answer(decision)) or '(an empty answer)'}"
            + ("" if matched else " (none of the poll's answers)"))


def stage_rows(result: dict) -> list[str]:
    """The revealed results on the stage, one short markdown line each: an answer's count (the
    decision marked ✅, the answer cut at a word), at most STAGE_ROWS answers (the decision and the
    most predicted; the others summed up in one line), a line when no answer is the decision."""
    decision = result["decision"]
    rows = [(i, option, n, polls.matches(option, decision)) for i, option in enumerate(result["counts"])
            for n in [result["counts"][option]]]
    if len(rows) > STAGE_ROWS:  # the decision first, then the most predicted; shown in the poll's order
        kept = sorted(rows, key=lambda row: (not row[3], -row[2], row[0]))[:STAGE_ROWS - 1]
        rest = [row for row in rows if row not in kept]
        rows = sorted(kept)
    else:
        rest = []
    lines = [f"{'✅' if right else '✗'} **{n}** · {md_escape(handout.cut_words(option, STAGE_OPTION_CHARS))}"
             + (" · the decision" if right else "") for _, option, n, right in rows]
    if rest:
        lines.append(f"✗ **{sum(row[2] for row in rest)}** · {len(rest)} other answers")
    if not any(row[3] for row in rows):
        lines.append("✅ The decision is none of these answers." if decision is not None
                     else "No decision was reached.")
    return lines


def right_line(result: dict, limit: int = 0) -> str:
    """Who predicted right, in one markdown line (`limit`: at most that many characters of names)."""
    right = result["right"] or []
    names = ", ".join(right)
    if limit:
        names = handout.cut_words(names, limit)
    return f"**Predicted right: {len(right)} of {result['total']}**" + (f" · {md_escape(names)}" if right else "")


def render_results(result: dict, compact: bool = False) -> None:
    """What the debate decided, the counts per option with the decision marked, and who predicted
    right (revealed polls only): a table, or a few short lines (`compact`, for the presenter's band)."""
    if result["counts"] is None:
        return
    decision = result["decision"]
    marks = {option: DECIDED_MARK if polls.matches(option, decision) else NOT_DECIDED_MARK
             for option in result["counts"]}
    with st.container(key="poll_results", border=not compact):
        if compact:
            for i, line in enumerate(stage_rows(result)):
                with st.container(key=f"poll_result_{i}"):
                    st.markdown(line)
            with st.container(key="poll_right"):
                st.markdown(right_line(result, limit=60))
            return
        with st.container(key="poll_decision"):
            st.markdown(decided_line(result))
        rows = [{"answer": option, "predictions": n, "decision": marks[option]}
                for option, n in result["counts"].items()]
        if decision is not None and DECIDED_MARK not in marks.values():  # the decided answer gets a row too
            rows.append({"answer": handout.headline_answer(decision), "predictions": 0,
                         "decision": f"{DECIDED_MARK} (not a poll answer)"})
        st.table(rows)
        with st.container(key="poll_right"):
            st.markdown(right_line(result))


def render_stage(debate_id: str) -> None:
    """The poll on the stage, refreshed every POLL_REFRESH_S: question, link, count, results."""

    @st.fragment(run_every=POLL_REFRESH_S)
    def stage() -> None:
        store = open_store()
        poll = current_poll(store, debate_id)
        if poll is None:
            return
        result = polls.results(store, poll["id"])
        # A compact band for a 1280x720 screen: the question and the count on one line, then the link
        # (while open) or the results in a line or two (once revealed).
        word = {**STATUS_WORDS, "closed": "closed: waiting for the reveal"}
        with st.container(key="poll_stage", border=True):
            with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
                st.markdown(f"**🗳️ {md_escape(poll['question'])}**", width="content")
                with st.container(key="poll_count", width="content"):
                    st.markdown(f"**{result['total']}** prediction{'s' if result['total'] != 1 else ''} · "
                                f"{word[poll['status']]}")
            if poll["status"] == "open":
                link, reachable = poll_link(poll["id"])
                with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
                    with st.container(key="poll_qr", width="content"):
                        st.image(qr_png(link), width=QR_PX, output_format="PNG")  # lossless: a sharp code
                    with st.container(key="poll_join"):
                        st.markdown("Predict on your own device: scan the code or type")
                        with st.container(key="poll_link"):
                            st.code(link, language=None, wrap_lines=False)
                        if not reachable:
                            st.caption("Students' devices cannot open a localhost link: give them this "
                                       "computer's network address in its place.")
            render_results(result, compact=True)

    stage()


def qr_png(link: str) -> bytes:
    """The link as a QR code (a full QR symbol: phones' cameras do not read Micro QR), a PNG."""
    out = io.BytesIO()
    segno.make_qr(link, error="m").save(out, kind="png", scale=6, border=2)
    return out.getvalue()


# ----- the students' page -----------------------------------------------------------------------
def _predict(poll_id: str) -> None:
    voter = (st.session_state.get("poll_voter") or "").strip() or guest_name()
    _act(polls.predict, poll_id, voter, st.session_state.get("poll_choice"),
         done="Prediction recorded: you may change it until the poll closes.")
    st.session_state[POLL_VOTER] = voter


def guest_name() -> str:
    """A voter name for a student who gives none: this device's session token."""
    return f"guest-{owner_id()[:6]}"


def render_student_page() -> None:
    """The page students open: the poll's question and answers, their prediction, the reveal."""
    poll_id = st.query_params.get("poll") or ""
    if not poll_id:
        poll_id = st.text_input("Poll code", key="poll_id_input", placeholder="the code your teacher shows")
    if not poll_id:
        return
    store = open_store()
    poll = polls.get_poll(store, poll_id)
    if poll is None:
        st.error(f"poll: there is no poll {md_escape(poll_id)} here. Check the link or the code.")
        return

    @st.fragment(run_every=POLL_REFRESH_S)
    def watch_status() -> None:  # reload the page when the teacher closes or reveals the poll
        now = polls.get_poll(open_store(), poll["id"])
        if now is not None and now["status"] != poll["status"]:
            st.rerun(scope="app")

    record = store.get_debate(poll["debate_id"]) or {}
    with st.container(key="poll_debate_question"):
        st.markdown(f"**The debate's question:** {md_escape(record.get('question', ''))}")
    st.header(md_escape(poll["question"]))
    _notice()
    me = st.session_state.get(POLL_VOTER) or guest_name()  # a reload keeps both (session_memory)
    mine = polls.results(store, poll["id"])
    if poll["status"] == "open":
        st.radio("Which answer will win?", poll["options"], key="poll_choice", index=None)
        st.text_input("Your name (optional)", key="poll_voter", placeholder="leave empty to stay anonymous")
        st.button("Send my prediction", key="poll_predict", type="primary", on_click=_predict, args=(poll["id"],),
                  disabled=not st.session_state.get("poll_choice"))
    elif poll["status"] == "closed":
        st.info("Predictions are closed. Wait for the reveal.")
    elif poll["status"] == "decided":
        st.info("The poll is closed: the debate has decided. Wait for the reveal.")
    if me:
        option = polls.prediction_of(store, poll["id"], me)
        if option is not None:
            with st.container(key="poll_mine"):
                st.markdown(f"Your prediction ({md_escape(me)}): **{md_escape(option)}**")
    if poll["status"] == "revealed":
        render_results(mine)
        if me and mine["predictions"] is not None:
            right = me in (mine["right"] or [])
            st.markdown("🎉 You predicted right!" if right else "Not this time: the debate decided otherwise.")
    watch_status()
