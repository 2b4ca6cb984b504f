"""The Experiments page's parts: define a sweep (form or YAML), list stored experiments, follow one's
progress, and show its results (table, plots with their data, CSV, each debate in the transcript view).

An experiment never runs inside the script run: Start hands it to `mad_core.experiments.runner.
start_background`, a daemon thread of the server. Progress is read from the database by a
fragment that refreshes every `REFRESH_S` seconds while the experiment runs, so a reloaded page (or
an experiment run by `python -m mad_core experiment` in a terminal) shows the same progress.

Keys: form `exp_name`, `exp_task_set`, `exp_items`, `exp_players`, `exp_seeds`, `exp_concurrency`,
`exp_protocols`, `exp_paradigms`, `exp_generators`, `exp_orderings`, `exp_agents`, `exp_models`,
`exp_judge_model`, `exp_rounds`, `exp_max_rounds`, `exp_tft`, `exp_aad`, `exp_ci`, `exp_start`;
YAML `exp_yaml`, `exp_upload`, `exp_start_yaml`; list `exp_list`, `exp_open_<id8>`; opened
experiment `exp_progress`, `exp_refresh`, `exp_stop`, `exp_resume`, `exp_table`, `exp_csv`, `exp_runs_csv`,
`exp_plot_<name>` (+ `exp_plot_<name>_data`), `exp_debates`, `exp_debate_<run index>`.
What it must not do: run a debate in the script, compute a metric, or render user or model text
as HTML (labels and answers are escaped for Markdown).
"""
from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from mad_core import glossary, registry
from mad_core.config import DEFAULT_MODEL, ConfigError, read_config_data
from mad_core.experiments import ExperimentConfig, create_experiment, publish, results, runner, storage, uncertainty
from mad_core.tasks.generated import GENERATED_SETS
from mad_core.tasks.sets import task_sets

from . import plots
from .common import OPEN_DEBATE, id8, md_escape, model_markdown, open_store, short, when

EXP_OPEN = "experiment_open"  # session key: the experiment opened on this page
EXP_ERROR = "experiment_error"  # session key: why the last Start was refused
TRANSCRIPTS_PAGE = "pages/1_Transcripts.py"
REFRESH_S = 1.0
TFT_CHOICES = ["none", "0", "1", "2", "3"]
SWITCH = {"off": False, "on": True}
MAX_DEBATE_ROWS = 100  # each row is a button: drawing thousands would slow every run of the page


# ----- defining an experiment --------------------------------------------------------------------------
def _numbers(text: str, name: str) -> list[int]:
    """ "1, 2" -> [1, 2]; ConfigError naming the field otherwise."""
    try:
        values = [int(part) for part in str(text).replace(";", ",").split(",") if part.strip()]
    except ValueError:
        raise ConfigError(name, f"expected whole numbers separated by commas, got {short(text, 60)!r}") from None
    if not values:
        raise ConfigError(name, "give at least one whole number")
    return values


def _names(text: str) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


def _axis(base: dict[str, Any], grid: dict[str, list[Any]], key: str, values: list[Any]) -> None:
    """One value goes in the base, several make a grid axis (so labels name only what varies)."""
    if len(values) == 1:
        base[key] = values[0]
    elif values:
        grid[key] = values


def form_spec(state: Any) -> dict[str, Any]:
    """The experiment the form describes (not yet validated: ExperimentConfig does that)."""
    base: dict[str, Any] = {}
    grid: dict[str, list[Any]] = {}
    _axis(base, grid, "protocol", list(state.get("exp_protocols") or []))
    _axis(base, grid, "paradigm", list(state.get("exp_paradigms") or []))
    _axis(base, grid, "generator", list(state.get("exp_generators") or []))
    _axis(base, grid, "ordering", list(state.get("exp_orderings") or []))
    _axis(base, grid, "agents", _numbers(state.get("exp_agents") or "3", "agents"))
    _axis(base, grid, "models", _names(state.get("exp_models") or DEFAULT_MODEL))
    _axis(base, grid, "rounds", _numbers(state.get("exp_rounds") or "2", "rounds"))
    _axis(base, grid, "tit_for_tat", [None if v == "none" else int(v) for v in state.get("exp_tft") or []])
    _axis(base, grid, "aad", [SWITCH[v] for v in state.get("exp_aad") or []])
    _axis(base, grid, "ci", [SWITCH[v] for v in state.get("exp_ci") or []])
    base["max_rounds"] = int(state.get("exp_max_rounds") or 3)
    judge = (state.get("exp_judge_model") or "").strip()
    if judge:
        base["judge_model"] = judge
    spec: dict[str, Any] = {
        "name": (state.get("exp_name") or "").strip() or "experiment", "task_set": state.get("exp_task_set"),
        "items": int(state.get("exp_items") or 1), "seeds": _numbers(state.get("exp_seeds") or "0", "seeds"),
        "concurrency": int(state.get("exp_concurrency") or 2), "base": base, "grid": grid}
    if spec["task_set"] in GENERATED_SETS:
        spec["task_options"] = {"players": int(state.get("exp_players") or 4)}
    return spec


def _start(spec: Any) -> None:
    """Validate, store and start an experiment in the background; remember why when refused."""
    st.session_state.pop(EXP_ERROR, None)
    try:
        experiment = ExperimentConfig.from_dict(spec)
    except ConfigError as exc:
        st.session_state[EXP_ERROR] = f"{exc.field}: {exc.message}"
        return
    store = open_store()
    experiment_id = create_experiment(store, experiment)
    try:
        runner.start_background(experiment_id, db_path=store.path, embed=plots.EMBED)
    except (ConfigError, storage.ExperimentBusy, LookupError) as exc:
        st.session_state[EXP_ERROR] = str(exc)
    st.session_state[EXP_OPEN] = experiment_id


def _start_form() -> None:
    try:
        spec = form_spec(st.session_state)
    except ConfigError as exc:
        st.session_state[EXP_ERROR] = f"{exc.field}: {exc.message}"
        return
    _start(spec)


def _start_yaml() -> None:
    upload = st.session_state.get("exp_upload")
    text = upload.getvalue() if upload is not None else st.session_state.get("exp_yaml") or ""
    if not (text.strip() if isinstance(text, str) else text):
        st.session_state[EXP_ERROR] = "experiment: paste YAML or upload a file first"
        return
    try:
        data = read_config_data(text)
    except ConfigError as exc:
        st.session_state[EXP_ERROR] = f"{exc.field}: {exc.message}"
        return
    _start(data)


def render_new() -> None:
    st.subheader("New experiment")
    form_tab, yaml_tab = st.tabs(["Form", "YAML"])
    with form_tab:
        top = st.columns(4)
        top[0].text_input("Name", "experiment", key="exp_name")
        top[1].selectbox("Task set", task_sets() + list(GENERATED_SETS), key="exp_task_set")
        top[2].number_input("Items", 1, 1000, 3, key="exp_items",
                            help="Hand-written sets: the first n items. KKS: n generated puzzles.")
        top[3].number_input("KKS players", 3, 9, 4, key="exp_players", help="Knight-Knave-Spy puzzles only.")
        row = st.columns(4)
        row[0].text_input("Seeds", "1, 2", key="exp_seeds", help="Each item is debated once per seed.")
        row[1].number_input("Concurrency", 1, 64, 2, key="exp_concurrency", help="Debates at once.")
        row[2].text_input("Agents", "3", key="exp_agents", help="A count, or several counts: 3, 5")
        row[3].text_input("Rounds", "2", key="exp_rounds", help="One value or several: 1, 2, 3")
        st.text_input("Models (comma-separated; each one is a configuration for every agent)", DEFAULT_MODEL,
                      key="exp_models", help="Any litellm name, or a router group name.")
        grid = st.columns(4)
        grid[0].multiselect("Protocols", registry.names("protocol"), ["simple_voting"], key="exp_protocols")
        grid[1].multiselect("Paradigms", registry.names("paradigm"), ["memory"], key="exp_paradigms")
        grid[2].multiselect("Generators", registry.names("response_generator"), ["simple"], key="exp_generators")
        grid[3].multiselect("Orderings", registry.names("ordering"), ["fixed"], key="exp_orderings")
        more = st.columns(5)
        more[0].number_input("Max rounds", 1, 100, 3, key="exp_max_rounds")
        more[1].multiselect("Tit for tat", TFT_CHOICES, ["none"], key="exp_tft")
        more[2].multiselect("AAD", list(SWITCH), ["off"], key="exp_aad")
        more[3].multiselect("CI", list(SWITCH), ["off"], key="exp_ci", help="Collective Improvement (seed 000).")
        more[4].text_input("Judge model", "", key="exp_judge_model", placeholder="for the judge protocol")
        st.button("Start experiment", key="exp_start", type="primary", on_click=_start_form)
    with yaml_tab:
        st.caption("The format of assets/experiments/*.yaml (README, section Experiments).")
        st.text_area("Experiment YAML", key="exp_yaml", height=220)
        st.file_uploader("…or upload a file", type=["yaml", "yml", "json"], key="exp_upload")
        st.button("Start from YAML", key="exp_start_yaml", type="primary", on_click=_start_yaml)
    error = st.session_state.get(EXP_ERROR)
    if error:
        st.error(model_markdown(error))  # it may quote the spec's own text: no image, no math


# ----- the list -------------------------------------------------------------------------------------
def render_list() -> None:
    st.subheader("Experiments")
    rows = storage.list_experiments(open_store())
    with st.container(key="exp_list"):
        if not rows:
            st.caption("No experiments yet.")
        for row in rows:
            with st.container(border=True, key=f"exp_row_{id8(row['id'])}"):
                left, right = st.columns([6, 1], vertical_alignment="center")
                left.markdown(f"**{md_escape(short(row['name'], 80))}** · `{id8(row['id'])}` · {when(row['created_at'])}"
                              f" · **{row['status']}** · {row['done']}/{row['total']} debates done, "
                              f"{row['failed']} failed")
                if right.button("Open", key=f"exp_open_{id8(row['id'])}", width="stretch"):
                    st.session_state[EXP_OPEN] = row["id"]
                    st.rerun()


# ----- one experiment ---------------------------------------------------------------------------------
def render_experiment(experiment_id: str) -> None:
    store = open_store()
    record = storage.get_experiment(store, experiment_id)
    if record is None:
        st.warning(f"Experiment {id8(experiment_id)} is not in the store.")
        st.session_state.pop(EXP_OPEN, None)
        return
    st.divider()
    st.header(md_escape(short(record["name"], 120)))  # the user's name for it: escaped, never markup
    st.caption(md_escape(results.spec_summary(record["spec"])) + f" · `{experiment_id}`")
    _progress(experiment_id, record["status"])
    _results(store, experiment_id)


def _progress(experiment_id: str, status: str) -> None:
    @st.fragment(run_every=REFRESH_S if status == "running" else None)
    def show() -> None:
        store = open_store()
        record = storage.get_experiment(store, experiment_id) or {}
        now = record.get("status", status)
        if now != status:  # it ended (or started) meanwhile: draw the whole page again
            st.rerun(scope="app")
        progress = runner.progress_of(store, experiment_id)
        with st.container(key="exp_progress"):
            st.progress(progress.fraction, text=f"{progress.done} of {progress.total} debates done · "
                                                 f"{progress.failed} failed · {progress.running} running · "
                                                 f"status {now}"
                                                 + (f" · {runner.format_eta(progress.eta_s)}" if now == "running"
                                                    else ""))
        if record.get("error"):
            st.error(model_markdown(record["error"]))
        here = runner.active(experiment_id)
        if now == "running":
            if st.button("Refresh results", key="exp_refresh", help="The table below shows the debates done when "
                                                                    "the page was drawn; it redraws by itself at the end."):
                st.rerun(scope="app")
            if here is not None:
                st.button("Stop", key="exp_stop", on_click=here.stop,
                          help="Stops the running debates (they can be resumed) and starts no new one.")
            else:
                st.caption("Running in another process (e.g. the command line): stop it there.")
        elif now in ("pending", "stopped", "interrupted") and progress.done < progress.total:
            st.button("Resume", key="exp_resume", on_click=_resume, args=(experiment_id,),
                      help="Runs the debates not yet done; interrupted debates continue from their last turn.")

    show()


def _resume(experiment_id: str) -> None:
    st.session_state.pop(EXP_ERROR, None)
    try:
        runner.start_background(experiment_id, db_path=open_store().path, embed=plots.EMBED)
    except (ConfigError, storage.ExperimentBusy, LookupError) as exc:
        st.session_state[EXP_ERROR] = getattr(exc, "field", "experiment") + ": " + getattr(exc, "message", str(exc))


def _results(store, experiment_id: str) -> None:
    found = results.experiment_results(store, experiment_id, embed=plots.EMBED)
    titles = [title for title, _, _ in results.shown_metrics(found.table).values()]
    # One help icon for the section (two controls never share the name "Help"): every column's sentence.
    st.subheader("Results", help=glossary.help_lines(
        *titles, "95 % interval", "vs baseline", "pairs", "difference", "McNemar p", "Holm p", "Cohen's h",
        "A right, B wrong", "A wrong, B right", "right → wrong", "wrong → right", "net"))
    st.caption("Accuracy with its 95 % interval (Wilson; when items repeat, a bootstrap that resamples whole "
               "items); a debate without a decision counts as wrong. \"vs\" a baseline: the difference on the same "
               "items and seeds, its paired-bootstrap interval and the exact McNemar p corrected by Holm over the "
               "sweep. Other columns: mean ± sample standard deviation over the debates that ended.")
    records = results.display_records(found.table, found.statistics)
    with st.container(key="exp_table"):
        st.table([{key: md_escape(value) if key == "configuration" else value for key, value in record.items()}
                  for record in records])
    comparisons = uncertainty.comparison_records(found.statistics, found.labels)
    _comparisons(comparisons, uncertainty.change_records(found.statistics, found.labels))
    name = f"experiment-{id8(experiment_id)}"
    columns = st.columns(4)
    # Each file is made when its button is clicked (on a thread of its own), not at every run of the
    # page: a sweep of 10,000 debates would otherwise write its CSV each time the page is drawn.
    columns[0].download_button("Results table (CSV)", lambda: results.to_csv(results.table_records(
        found.table, found.statistics)), file_name=f"{name}.csv", mime="text/csv", key="exp_csv", on_click="ignore")
    columns[1].download_button("Every debate (CSV)", lambda: results.to_csv(results.run_records(
        found.runs, found.configurations)), file_name=f"{name}-debates.csv", mime="text/csv", key="exp_runs_csv",
        on_click="ignore")
    columns[2].download_button("Comparisons (CSV)", lambda: results.to_csv(comparisons),
                               file_name=f"{name}-comparisons.csv", mime="text/csv", key="exp_comparisons_csv",
                               on_click="ignore")
    columns[3].download_button("Report (Markdown)", lambda: publish.markdown_report(found),
                               file_name=f"{name}-report.md", mime="text/markdown", key="exp_report",
                               on_click="ignore")
    for problem in found.problems:
        st.warning(model_markdown(problem))
    _plots(found.plots, name)
    _debates(found.runs)


def _comparisons(comparisons: list[dict[str, Any]], changes: list[dict[str, Any]]) -> None:
    """Every paired comparison of the sweep, and what discussion changed per configuration."""
    if comparisons:
        st.markdown("**Paired comparisons** (A − B on the same items and seeds)")
        with st.container(key="exp_comparisons"):
            st.table([{"A": md_escape(c["a"]), "B": md_escape(c["b"]), "pairs": c["n_pairs"],
                       "difference": _signed(c["diff"]), "95 % interval": _interval(c["diff_low"], c["diff_high"]),
                       "McNemar p": _p(c["p_mcnemar"]), "Holm p": _p(c["p_holm"]), "Cohen's h": _signed(c["cohens_h"]),
                       "A right, B wrong": c["a_right_b_wrong"], "A wrong, B right": c["a_wrong_b_right"]}
                      for c in comparisons])
    if any(c["n"] for c in changes):
        st.markdown("**What discussion changed** (first round's majority answer → final decision)")
        with st.container(key="exp_changes"):
            st.table([{"configuration": md_escape(c["configuration"]), "right → wrong": c["right_to_wrong"],
                       "wrong → right": c["wrong_to_right"], "stayed right": c["stayed_right"],
                       "stayed wrong": c["stayed_wrong"], "net": c["net"]} for c in changes])


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def _interval(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"[{low:+.2f}, {high:+.2f}]"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


# ----- plots -----------------------------------------------------------------------------------------
def accuracy_figure(data: list[dict[str, Any]]) -> go.Figure | None:
    """Accuracy per configuration with its 95 % interval as the error bar (none where there is none)."""
    shown = [d for d in data if d["accuracy"] is not None]
    if not shown:
        return None
    above = [d["high"] - d["accuracy"] if d.get("high") is not None else 0.0 for d in shown]
    below = [d["accuracy"] - d["low"] if d.get("low") is not None else 0.0 for d in shown]
    fig = go.Figure(go.Bar(x=[d["configuration"] for d in shown], y=[d["accuracy"] for d in shown],
                           error_y={"type": "data", "symmetric": False, "array": above, "arrayminus": below},
                           name="accuracy"))
    fig.update_layout(title="Accuracy per configuration (95 % interval)", yaxis={"title": "accuracy", "range": [0, 1.05]})
    return fig


def similarity_figure(data: list[dict[str, Any]]) -> go.Figure | None:
    if not data:
        return None
    fig = go.Figure(go.Scatter(x=[d["similarity"] for d in data], y=[d["accuracy"] for d in data],
                               text=[d["configuration"] for d in data], mode="markers+text",
                               textposition="top center", name="configurations"))
    fig.update_layout(title="Answer similarity vs accuracy", xaxis={"title": "mean answer similarity",
                                                                   "range": [-0.05, 1.1]},
                      yaxis={"title": "accuracy", "range": [-0.05, 1.1]})
    return fig


def rounds_figure(data: dict[str, dict[int, int]]) -> go.Figure | None:
    if not any(data.values()):
        return None
    fig = go.Figure([go.Bar(x=list(counts), y=list(counts.values()), name=label) for label, counts in data.items()])
    fig.update_layout(title="Rounds to decision", barmode="group", xaxis={"title": "round", "dtick": 1},
                      yaxis={"title": "debates"})
    return fig


def transitions_figure(data: dict[str, dict[str, int]]) -> go.Figure | None:
    if not data:
        return None
    initial = sorted(data)
    final = sorted({f for row in data.values() for f in row})
    fig = go.Figure(go.Heatmap(z=[[data[i].get(f, 0) for f in final] for i in initial], x=final, y=initial,
                               colorscale="Blues", texttemplate="%{z}", name="transitions"))
    fig.update_layout(title="Initial → final state of each agent (summed over debates)",
                      xaxis={"title": "final state"}, yaxis={"title": "initial state"})
    return fig


PLOTS = {"accuracy": accuracy_figure, "similarity_vs_accuracy": similarity_figure, "rounds": rounds_figure,
         "transitions": transitions_figure}


def _plots(data: dict[str, Any], name: str) -> None:
    columns = st.columns(2)
    for i, (key, build) in enumerate(PLOTS.items()):
        with columns[i % 2], st.container(key=f"exp_plot_{key}"):
            fig = build(data[key])
            if fig is None:
                st.caption(f"{key.replace('_', ' ')}: no data yet.")
                continue
            st.plotly_chart(fig, key=f"exp_chart_{key}", width="stretch")
            st.download_button("Data (JSON)", json.dumps(data[key], indent=2, ensure_ascii=False),
                               file_name=f"{name}-{key}.json", mime="application/json",
                               key=f"exp_plot_{key}_data", on_click="ignore")


# ----- the debates --------------------------------------------------------------------------------------
def _open_debate(debate_id: str) -> None:
    st.session_state[OPEN_DEBATE] = debate_id


def _debates(runs: list[dict[str, Any]]) -> None:
    st.subheader("Debates")
    with st.container(key="exp_debates", height=420):
        for run in runs[:MAX_DEBATE_ROWS]:
            left, right = st.columns([6, 1], vertical_alignment="center")
            answer = (run.get("summary") or {}).get("answer")
            left.markdown(f"{md_escape(run['config_label'])} · item {md_escape(run['item_id'])} · seed {run['seed']}"
                          f" · **{run['status']}**" + (f" · answer: {md_escape(short(answer, 60))}" if answer else ""))
            if run.get("debate_id") and right.button("Open", key=f"exp_debate_{run['run_index']}", width="stretch"):
                _open_debate(run["debate_id"])
                st.switch_page(TRANSCRIPTS_PAGE)
        if len(runs) > MAX_DEBATE_ROWS:
            st.caption(f"The first {MAX_DEBATE_ROWS} of {len(runs)} debates; the CSV lists them all.")
