"""The prediction poll's UI: the teacher's controls, the poll on the presenter's stage, and the page
students open on their own devices (`/Poll?poll=<id>`).

- Teacher (presenter sidebar): `poll_question`, `poll_options` (one answer per line; `poll_fill`
  puts the agents' current answers there, read with the debate's answer type: "yes", "no", not
  their whole replies), `poll_something_else` (offer "Something else" too: on by default),
  `poll_open` (only before the decision is shown; once it is shown the poll
  takes no more predictions: `close_on_decision`),
  `poll_close`, `poll_reveal` (only once the decision is shown, so the results never spoil it),
  a prediction recorded on a student's behalf (`poll_proxy_voter`, `poll_proxy_option`,
  `poll_proxy_send`: known by the student's name), and after the reveal `poll_mark` (which answer
  counts as right: as the debate decided, or the teacher's pick, e.g. "Something else").
- Stage (`poll_stage`, a compact band in the presenter's screen): the question and how many
  predictions are in (`poll_count`: open / closed / closed because the debate decided) on one
  line, while open the link's QR code for phones (`poll_qr`, segno) beside the plain link in big
  type that never breaks inside (`poll_link`), and, only after the reveal, one short line per
  answer with its count (`poll_result_{i}`, the decision marked) and one line of who predicted
  right (`poll_right`), inside `poll_results`. It refreshes itself every POLL_REFRESH_S.
- Student page: `poll_id_input` when the URL has no poll, `poll_debate_question`, `poll_voter` (name, only
  a label; empty = "guest-…"), `poll_choice`, `poll_predict` (while open; once the debate decided the page says
  the poll closed because of it, and a late send is refused by `mad_core.polls`), `poll_mine` (your prediction),
  `poll_results` (after the reveal: `poll_decision`, what the debate decided, then the table where every
  answer's decision cell says whether it is the decision or counts as right, and a row for the decided answer
  when it is none of the poll's answers). The voter is this DEVICE (`device_token`: a random token kept in the
  URL as `device=`, and in the session; a reload keeps it), so a device that predicts again changes its own
  prediction and two students who type one name are two voters; a refused name says why ("Your name: ...").

Join codes: while a poll is open the stage (`poll_code`) and the teacher's controls (`poll_teacher_code`)
show its code in big type with the /join address (`render_code`; madlab_ui/join.py is that page). A debate
has one open poll at a time; with several, the teacher picks the one on the stage (`poll_pick`), and the
form for the next one appears once none is open. `render_poll` is the students' view of one poll, shared
by this page and /join (there the nickname is the name, and the page follows the debate's next poll).

Counts are never drawn before the reveal: `mad_core.polls.results` does not even return them.
What it must not do: write the store except through `mad_core.polls`, or render user or model
text as HTML (options, names and questions are markdown-escaped or plain text).
"""
from __future__ import annotations

import hashlib
import io
from urllib.parse import urlsplit, urlunsplit

import segno
import streamlit as st

from mad_core import handout, polls
from mad_core.polls import PollError
from mad_core.view import DISCUSSION_KINDS, DebateView

from . import network
from .common import POLL_VOTER, md_escape, model_markdown, open_store, owner_id

POLL_REFRESH_S = 2.0
QR_PX = 120  # the QR code on the stage: a phone reads it across a classroom from a projector
STAGE_ROWS = 4  # answers listed on the stage after the reveal (the rest summed up in one line)
STAGE_OPTION_CHARS = 32  # an answer on the stage's results (its whole text is on the students' page)
POLL_PAGE = "Poll"  # the students' page's URL path (madlab_ui/navigation.py)
JOIN_PAGE = "join"  # the page where a student types a join code (madlab_ui/join.py)
CLASS_VIEW = "presenter_class_view"  # session key: False while the teacher shows the agents after a reveal
PICK = "poll_pick"  # session key (the teacher's selectbox): the poll on the stage, when the debate has several
NOTICE = "poll_notice"  # session key: (kind, message) shown once after a poll action
DEVICE_PARAM = "device"  # URL parameter of the students' page: this device's token
POLL_DEVICE = "poll_device"  # session key: this device's token
AS_DECIDED = "as the debate decided"  # `poll_mark`'s first choice: no teacher's pick
# How a refused field is named on screen (PollError.field -> the label of the widget it came from).
STUDENT_FIELDS = {"voter": "Your name", "option": "Your prediction", "device": "This page"}
TEACHER_FIELDS = {"voter": "Student's name", "option": "Answer", "options": "Answers", "question": "Question"}


def current_poll(store, debate_id: str) -> dict | None:
    """The poll on the stage: the teacher's pick among the debate's polls (PICK), else the newest."""
    found = polls.polls_of(store, debate_id)
    picked = [poll for poll in found if poll["id"] == st.session_state.get(PICK)]
    return (picked or found or [None])[0]


def poll_url(poll_id: str) -> str:
    """The plain link students type: this server, the Poll page, the poll id (no session token)."""
    return poll_link(poll_id)[0]


def poll_link(poll_id: str) -> tuple[str, bool]:
    """(poll_url, whether a student's device can follow it): a teacher's localhost address becomes
    this machine's network address (`madlab_ui.network`), as Streamlit's own "Network URL"."""
    return app_link(POLL_PAGE, f"poll={poll_id}")


def app_link(page: str, query: str = "") -> tuple[str, bool]:
    """(a link to this app's `page` with `query` that students type, whether their devices can follow it)."""
    try:
        here = urlsplit(st.context.url or "")
    except Exception:  # noqa: BLE001 - no browser context (tests): a relative link still works
        here = None
    if not here or not here.netloc:
        return f"/{page}" + (f"?{query}" if query else ""), True
    base = here.path.rsplit("/", 1)[0] if here.path.count("/") > 1 else ""
    netloc, reachable = network.student_netloc(here.netloc)
    return urlunsplit((here.scheme, netloc, f"{base}/{page}", query, "")), reachable


def _notice() -> None:
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        (st.error if notice[0] == "error" else st.success)(model_markdown(notice[1]))  # it may quote a name


def _act(action, *args, done: str = "", fields: dict[str, str] | None = None, **kwargs) -> None:
    """Run a poll action from a callback; refusals become a notice naming the field (as `fields`
    names it on screen: "Your name: has no visible characters")."""
    try:
        action(open_store(), *args, **kwargs)
    except PollError as exc:
        st.session_state[NOTICE] = ("error", f"{(fields or TEACHER_FIELDS).get(exc.field, exc.field)}: {exc.message}")
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
    store = open_store()
    for poll in polls.polls_of(store, debate_id):
        if poll["status"] == "open":
            polls.close_on_decision(store, poll["id"])
    polls.retire_codes(store, debate_id)  # a live debate's poll closed by the store: its code admits nobody


def _fill(view: DebateView) -> None:
    st.session_state["poll_options"] = "\n".join(current_answers(view))


def _open(debate_id: str, rnd: int | None) -> None:
    lines = (st.session_state.get("poll_options") or "").splitlines()
    _act(polls.open_poll, debate_id, lines, st.session_state.get("poll_question") or "", done="Poll opened.",
         something_else=bool(st.session_state.get("poll_something_else", True)), round=rnd)
    if st.session_state.get(NOTICE, ("",))[0] == "ok":
        st.session_state.pop(PICK, None)  # the stage shows the new poll


def _proxy(poll_id: str) -> None:
    _act(polls.predict, poll_id, st.session_state.get("poll_proxy_voter") or "",
         st.session_state.get("poll_proxy_option"), done="Prediction recorded.")
    if st.session_state.get(NOTICE, ("",))[0] == "ok":
        st.session_state["poll_proxy_voter"] = ""


def _reveal(poll_id: str) -> None:
    _act(polls.reveal, poll_id)
    st.session_state.pop(CLASS_VIEW, None)  # the stage shows the class's answers (madlab_ui.join)


def _mark(poll_id: str) -> None:
    picked = st.session_state.get("poll_mark")
    _act(polls.mark_right, poll_id, None if picked in (None, AS_DECIDED) else picked, done="Right answer set.")


def render_mark(poll: dict) -> None:
    """After the reveal: which answer counts as right (`polls.mark_right`)."""
    choices = [AS_DECIDED, *poll["options"]]
    marked = poll.get("marked_right")
    st.selectbox("Counted as right", choices, index=choices.index(marked) if marked in choices else 0,
                 key="poll_mark", on_change=_mark, args=(poll["id"],),
                 help="When no listed answer names the decision, “Something else” is right. Pick an answer "
                      "to count it as right instead.")


def render_teacher(debate_id: str, view: DebateView) -> None:
    """The teacher's poll controls (for the presenter's sidebar): which poll is on the stage (when the
    debate has several: one before the debate and one after any round), its controls, and the form that
    opens the next one while none is open (one open poll at a time) and the decision is not shown."""
    store = open_store()
    found = polls.polls_of(store, debate_id)
    st.subheader("Prediction poll")
    _notice()
    if len(found) > 1:
        names = {poll["id"]: poll_name(poll) for poll in found}
        st.selectbox("Poll on the stage", list(names), key=PICK, format_func=names.get)
    poll = current_poll(store, debate_id)
    if poll is not None:
        render_controls(store, poll, view.decision is not None)
    if any(other["status"] == "open" for other in found):
        return
    if view.decision is not None:
        st.caption("The decision is shown: a new poll would come too late.")
        return
    render_open_form(debate_id, view, again=bool(found))


def poll_name(poll: dict) -> str:
    """A poll in the teacher's picker: its round, its status, its question (plain text)."""
    when = "before the debate" if poll.get("round") in (None, 0) else f"after round {poll['round']}"
    return f"{when} · {STATUS_WORDS[poll['status']]} · {handout.cut_words(poll['question'], 40)}"


def render_controls(store, poll: dict, decided: bool) -> None:
    """The stage poll's controls: its code while open, a prediction recorded for a student, Close and
    Reveal; after the reveal, which answer counts as right."""
    if poll["status"] == "revealed":
        render_mark(poll)
        return
    st.caption(f"Poll `{poll['id']}` is **{STATUS_WORDS[poll['status']]}**.")
    render_code(store, poll, "poll_teacher_code")
    st.selectbox("Record for a student", poll["options"], key="poll_proxy_option")
    st.text_input("Student's name", key="poll_proxy_voter", placeholder="name")
    st.button("Record prediction", key="poll_proxy_send", on_click=_proxy, args=(poll["id"],),
              disabled=poll["status"] != "open", width="stretch")
    left, right = st.columns(2)
    left.button("Close", key="poll_close", on_click=_act, args=(polls.close, poll["id"]),
                kwargs={"done": "Predictions closed."}, disabled=poll["status"] != "open", width="stretch")
    right.button("Reveal", key="poll_reveal", on_click=_reveal, args=(poll["id"],),
                 disabled=not decided, width="stretch",
                 help="Show the counts and who predicted right (once the decision is shown).")
    if not decided:
        st.caption("Reveal becomes possible once the decision is shown.")


def render_open_form(debate_id: str, view: DebateView, again: bool) -> None:
    """The form that opens a poll on the debate as it stands (its round: the latest on the screen, 0
    before the first)."""
    if again:
        st.markdown("**Next prediction**")
    st.session_state.setdefault("poll_options", "\n".join(current_answers(view)))
    st.text_input("Question", value=polls.DEFAULT_QUESTION, key="poll_question")
    st.text_area("Answers to choose from (one per line)", key="poll_options", height=120)
    st.button("Use the agents' current answers", key="poll_fill", on_click=_fill, args=(view,), width="stretch")
    st.checkbox(f"Offer “{polls.SOMETHING_ELSE}” too", value=True, key="poll_something_else",
                help="Right when the debate decides on none of the listed answers.")
    shown_round = max((turn.round for turn in view.turns), default=0)
    st.button("Open poll", key="poll_open", type="primary", on_click=_open, args=(debate_id, shown_round),
              width="stretch")


# ----- results (stage and student page) ---------------------------------------------------------
DECIDED_MARK = "✅ the decision"
RIGHT_MARK = "✅ counts as right"  # "Something else" (or the teacher's pick) when it names no decision itself
NOT_DECIDED_MARK = "✗ not the decision"
STATUS_WORDS = {"open": "open", "closed": "closed", "decided": "closed: the debate decided", "revealed": "revealed"}


def decided_line(result: dict) -> str:
    """What the debate decided, in one markdown line (its answer cut to a headline), and whether
    it is one of the poll's answers."""
    decision, right = result["decision"], right_options_of(result)
    if decision is None:
        return ("**No decision** was reached: nobody predicted right." if not right else
                f"**No decision** was reached: {md_escape(right[0])} counts as right.")
    matched = any(polls.matches(option, decision) for option in result["counts"])
    line = f"**The debate decided:** {md_escape(handout.headline_answer(decision)) or '(an empty answer)'}"
    if matched:
        return line
    return line + (f" (none of the listed answers: {md_escape(right[0])} counts as right)" if right
                   else " (none of the poll's answers)")


def right_options_of(result: dict) -> list[str]:
    """The options counted right in a revealed result (`polls.results`; computed by `polls.right_options`
    from its counts and decision when the result does not say)."""
    if result.get("right_options") is not None:
        return result["right_options"]
    return polls.right_options(list(result["counts"]), result["decision"])


def _mark_of(result: dict, option: str) -> str:
    """An answer's cell: the decision, right all the same ("Something else"), or neither."""
    if option not in right_options_of(result):
        return NOT_DECIDED_MARK
    return DECIDED_MARK if polls.matches(option, result["decision"]) else RIGHT_MARK


def stage_rows(result: dict) -> list[str]:
    """The revealed results on the stage, one short markdown line each: an answer's count (the
    decision marked ✅, the answer cut at a word), at most STAGE_ROWS answers (the decision and the
    most predicted; the others summed up in one line), a line when no answer is the decision.
    "Something else" has a line only when it was predicted or is right (the band stays short)."""
    decision, right_options = result["decision"], right_options_of(result)
    rows = [(i, option, n, option in right_options) for i, option in enumerate(result["counts"])
            for n in [result["counts"][option]]
            if n or option in right_options or not polls.is_something_else(option)]
    if len(rows) > STAGE_ROWS:  # the decision first, then the most predicted; shown in the poll's order
        kept = sorted(rows, key=lambda row: (not row[3], -row[2], row[0]))[:STAGE_ROWS - 1]
        rest = [row for row in rows if row not in kept]
        rows = sorted(kept)
    else:
        rest = []
    lines = [f"{'✅' if right else '✗'} **{n}** · {md_escape(handout.cut_words(option, STAGE_OPTION_CHARS))}"
             + ((" · the decision" if polls.matches(option, decision) else " · counts as right") if right else "")
             for _, option, n, right in rows]
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
    marks = {option: _mark_of(result, option) for option in result["counts"]}
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
        rows = [{"answer": md_escape(option), "predictions": n, "decision": marks[option]}  # cells are Markdown
                for option, n in result["counts"].items()]
        if decision is not None and DECIDED_MARK not in marks.values():  # the decided answer gets a row too
            rows.append({"answer": md_escape(handout.headline_answer(decision)), "predictions": 0,
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
                        render_code(store, poll, "poll_code")
                        if not reachable:
                            st.caption("Students' devices cannot open a localhost link: give them this "
                                       "computer's network address in its place.")
            render_results(result, compact=True)

    stage()


def render_code(store, poll: dict, key: str) -> None:
    """The poll's join code in big type (`key`), with the /join address it is typed into; nothing once
    the poll takes no more predictions (its code is retired)."""
    code = polls.poll_code(store, poll)
    if code is None:
        return
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key=key):
        st.markdown(f"or open **{md_escape(app_link(JOIN_PAGE)[0])}** and type the code", width="content")
        st.markdown(f"## `{code}`", width="content")  # the code's alphabet: letters and digits only


def qr_png(link: str) -> bytes:
    """The link as a QR code (a full QR symbol: phones' cameras do not read Micro QR), a PNG."""
    out = io.BytesIO()
    segno.make_qr(link, error="m").save(out, kind="png", scale=6, border=2)
    return out.getvalue()


# ----- the students' page -----------------------------------------------------------------------
def device_token() -> str:
    """This device's token, the voter the students' page predicts as: the URL's `device=` (a reload or
    the same link keeps it), else this session's, else one made from the session's own token (which the
    URL keeps as `session=`); it is written back into the URL."""
    token = st.query_params.get(DEVICE_PARAM)
    if not polls.valid_device(token):
        token = st.session_state.get(POLL_DEVICE)
    if not polls.valid_device(token):  # a hash: the session's token itself (it owns debates) never leaves it
        token = hashlib.sha256(f"madlab-poll-device:{owner_id()}".encode()).hexdigest()[:32]
    st.session_state[POLL_DEVICE] = token
    if st.query_params.get(DEVICE_PARAM) != token:
        st.query_params[DEVICE_PARAM] = token
    return token


def guest_name(device: str) -> str:
    """The name a student who gives none is shown under: "guest-" and the start of the device's token."""
    return f"guest-{device[:6]}"


def _predict(poll_id: str, device: str, nickname: str | None = None) -> None:
    typed = nickname or st.session_state.get("poll_voter") or ""
    _act(polls.predict, poll_id, typed if typed.strip() else guest_name(device), st.session_state.get("poll_choice"),
         device=device, fields=STUDENT_FIELDS, done="Prediction recorded: you may change it until the poll closes.")
    if nickname is None:
        st.session_state[POLL_VOTER] = typed  # the name field is filled in again after a reload (session_memory)


def _ask(poll: dict, device: str, nickname: str | None) -> None:
    """The open poll's answers, the name field (none for a student who joined: the nickname is the name)
    and the send button."""
    st.radio("Which answer will win?", poll["options"], key="poll_choice", index=None,
             format_func=md_escape)  # radio labels are Markdown: an option is shown as typed, never fetched
    if nickname is None:
        st.session_state.setdefault("poll_voter", st.session_state.get(POLL_VOTER) or "")
        st.text_input("Your name (optional)", key="poll_voter", placeholder="leave empty to stay anonymous")
    st.button("Send my prediction", key="poll_predict", type="primary", on_click=_predict,
              args=(poll["id"], device, nickname), disabled=not st.session_state.get("poll_choice"))


def render_student_page() -> None:
    """The page students open: the poll's question and answers, their prediction, the reveal."""
    poll_id = st.query_params.get("poll") or ""
    if not poll_id:
        poll_id = st.text_input("Poll code", key="poll_id_input", placeholder="the code your teacher shows")
    if not poll_id:
        return
    poll = polls.get_poll(open_store(), poll_id)
    if poll is None:
        st.error(f"poll: there is no poll {md_escape(poll_id)} here. Check the link or the code.")
        return
    render_poll(poll, device_token())


def render_poll(poll: dict, device: str, nickname: str | None = None, follow: bool = False) -> None:
    """A poll as a student's device shows it: the debate's question, the poll's, the answers while open
    (predicting as `nickname` when the student joined by code, else under the name typed), this device's
    prediction, the results after the reveal. It reloads itself when the teacher closes or reveals the
    poll, and (`follow`) when the teacher opens the debate's next poll."""
    store = open_store()

    @st.fragment(run_every=POLL_REFRESH_S)
    def watch_status() -> None:  # reload the page when the teacher closes or reveals the poll (or opens the next)
        now = polls.get_poll(open_store(), poll["id"])
        newest = polls.polls_of(open_store(), poll["debate_id"])[:1] if follow else []
        if (now is not None and now["status"] != poll["status"]) or (newest and newest[0]["id"] != poll["id"]):
            st.rerun(scope="app")

    record = store.get_debate(poll["debate_id"]) or {}
    with st.container(key="poll_debate_question"):
        st.markdown(f"**The debate's question:** {md_escape(record.get('question', ''))}")
    if nickname is not None:
        with st.container(key="poll_nickname"):
            st.markdown(f"You are **{md_escape(nickname)}**")
    st.header(md_escape(poll["question"]))
    _notice()
    if poll["status"] == "open":
        _ask(poll, device, nickname)
    elif poll["status"] == "closed":
        st.info("Predictions are closed. Wait for the reveal.")
    elif poll["status"] == "decided":
        st.info("The poll is closed: the debate has decided. Wait for the reveal.")
    mine = polls.prediction_of(store, poll["id"], device)  # this device's, whatever name it typed
    if mine is not None:
        with st.container(key="poll_mine"):
            st.markdown(f"Your prediction ({md_escape(mine['voter'])}): **{md_escape(mine['option'])}**")
    if poll["status"] == "revealed":
        result = polls.results(store, poll["id"])
        render_results(result)
        if mine is not None:
            st.markdown("🎉 You predicted right!" if mine["option"] in result["right_options"]
                        else "Not this time: the debate decided otherwise.")
    watch_status()
