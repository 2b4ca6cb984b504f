"""Command line: `python -m mad_core run | list | show | export | import | resume | experiment | cache`.

It runs debates through the same engine as the app (tokens stream to stdout, each turn
labelled with its agent) and reads the same database (`Store`). Settings are validated
before any model call or database write. Ctrl-C stops a debate gracefully through the
controller (a second Ctrl-C quits at once); the debate is then stored as 'stopped'.

Exit codes: 0 ok, 1 the debate failed, 2 bad input (settings, unknown id, unreadable file),
130 stopped with Ctrl-C (an experiment: 0 finished, 130 stopped and resumable with
`experiment --resume ID`, 1 failed). Never imports streamlit; never prints or stores API keys.

Bad input is one line on stderr, `error: <field>: <message>` (imports: `error: <file>: <field>:
<message>`), and exit code 2, before anything is written: settings are checked by
`DebateConfig`, imports completely by `export_schema.validate_export`, and numbers and texts
given as flags are bounded (`list --limit` 1..10000, `list --search` at most 1000 characters).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TextIO

from .config import (MAX_AGENTS, ConfigError, DebateConfig, clip, one_line, read_config_data, read_text_file,
                     short_repr)
from .model_keys import key_problems
from .presets import PRESET_DIR, preset_config, split_preset
from .events import (
    DEBATE_STATUSES,
    ChallengeResult,
    DebateFinished,
    DebateStarted,
    DecisionAttempted,
    DecisionReached,
    ErrorOccurred,
    Event,
    PersonasAssigned,
    RoundStarted,
    SteeringApplied,
    TokenReceived,
    TurnFinished,
    TurnRetried,
    TurnStarted,
    VoteCast,
)
from . import classroom, exports
from .export_schema import MAX_ID_CHARS, ExportError, validate_export
from .exports import STANCES, describe_ballot, format_time
from .store import (MAX_LIST_LIMIT, MAX_QUERY_CHARS, ResumeRefused, Store, default_db_path, list_debates,
                    mark_dead_interrupted)

EXIT_BY_STATUS = {"finished": 0, "stopped": 130, "failed": 1}
# `run` flags that set the config field of the same name.
FIELD_FLAGS = ("question", "protocol", "paradigm", "rounds", "max_rounds", "seed", "tit_for_tat", "ordering",
               "response_generator", "judge_model", "cache")
# Turn kinds printed without a "(kind)" tag after the agent label.
PLAIN_KINDS = ("draft", "discussion")
# Larger import files are refused unread.
MAX_IMPORT_BYTES = 200_000_000


class CliError(Exception):
    """Bad input from the user: printed as 'error: ...', exit code 2."""


# ----- configuration from a file and flags ---------------------------------------------------
def whole_number(text: str) -> int | str:
    """argparse type: the number, or the text itself when it is none (validation names the flag)."""
    try:
        return int(text)
    except ValueError:  # not a number, or too many digits to read
        return text


def config_from_args(args: argparse.Namespace) -> DebateConfig:
    """The config file (if any) with the flags laid over it, validated."""
    data = preset_config(args.preset) if args.preset else {}
    if args.config:  # a preset's file works too: its title and source are not settings
        data.update(split_preset(read_config_data(Path(args.config)))[0])
    for name in FIELD_FLAGS:
        value = getattr(args, name)
        if value is not None:
            data[name] = value
    if args.agents is not None or args.model is not None:
        data["agents"] = _agents_from_flags(data.get("agents"), args.agents, args.model)
    return DebateConfig.from_dict(data)


def _agents_from_flags(agents: Any, count: int | None, model: str | None) -> Any:
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_AGENTS):
        raise ConfigError("agents", f"--agents must be a whole number from 1 to {MAX_AGENTS}, got {short_repr(count)}")
    if agents is None:  # the config's default agents
        agents = DebateConfig(question="").to_dict()["agents"]
    if not isinstance(agents, list) or not all(isinstance(a, dict) for a in agents):
        return agents  # malformed: leave it to validation to name the problem
    if count is not None:
        template = {k: v for k, v in (agents[:1] or [{}])[0].items() if k not in ("label", "persona")}
        agents = agents[:count] + [{**template, "label": f"Agent {i + 1}"} for i in range(len(agents), count)]
    if model is not None:
        agents = [{**agent, "model": model} for agent in agents]
    return agents


# ----- printing events -----------------------------------------------------------------------
class Printer:
    """Writes a debate's events to a terminal as they arrive; tokens stream under agent labels.

    Agents that speak at the same time would interleave their tokens, so one turn streams
    live while the others are buffered and shown, in start order, as soon as it ends.
    """

    def __init__(self, out: TextIO):
        self.out = out
        self.labels: dict[str, str] = {}  # turn id -> "[Agent 1] " label
        self.active: str | None = None  # the turn streaming to the terminal
        self.waiting: dict[str, list[str]] = {}  # turns waiting for the terminal (start order): text so far
        self.done: set[str] = set()  # turns that finished
        self.streamed: set[str] = set()  # turns whose text arrived as tokens
        self.open_line: str | None = None  # turn whose text ends the current, unfinished line
        self.handlers: dict[type[Event], Callable[[Any], None]] = {
            DebateStarted: self.debate_started,
            PersonasAssigned: self.personas,
            RoundStarted: self.round_started,
            TurnStarted: self.turn_started,
            TokenReceived: self.token,
            TurnRetried: self.turn_retried,
            TurnFinished: self.turn_finished,
            VoteCast: self.vote,
            DecisionAttempted: self.decision_attempted,
            DecisionReached: self.decision_reached,
            ChallengeResult: self.challenge,
            SteeringApplied: self.steering,
            ErrorOccurred: self.error,
            DebateFinished: self.debate_finished,
        }

    def __call__(self, event: Event) -> None:
        handler = self.handlers.get(type(event))
        if handler is not None:
            handler(event)
            self.out.flush()

    # -- terminal lines ----------------------------------------------------------------------
    def _end_line(self) -> None:
        if self.open_line is not None:
            self.out.write("\n")
            self.open_line = None

    def _line(self, text: str) -> None:
        self._end_line()
        self.out.write(text + "\n")

    def _show(self, turn_id: str, text: str) -> None:
        """Write text of the active turn, starting a labelled line when needed."""
        if self.open_line != turn_id:
            self._end_line()
            self.out.write("\n" + self.labels[turn_id])
            self.open_line = turn_id
        self.out.write(text)

    # -- turns ---------------------------------------------------------------------------------
    def _enter(self, turn_id: str, agent: str, kind: str = "discussion") -> None:
        """Note a turn (once): it streams live if the terminal is free, else it waits."""
        if turn_id in self.labels:
            return
        self.labels[turn_id] = f"[{agent}] " + ("" if kind in PLAIN_KINDS else f"({kind}) ")
        if self.active is None:
            self.active = turn_id
            self._show(turn_id, "")
        else:
            self.waiting[turn_id] = []

    def _text(self, turn_id: str, text: str) -> None:
        if turn_id == self.active:
            self._show(turn_id, text)
        else:
            self.waiting[turn_id].append(text)

    def _next(self) -> None:
        """The active turn ended: show the waiting ones in start order, live from the first unfinished."""
        self._end_line()
        self.active = None
        while self.waiting:
            turn_id = next(iter(self.waiting))
            self.active = turn_id
            self._show(turn_id, "".join(self.waiting.pop(turn_id)))
            if turn_id not in self.done:
                return
            self._end_line()
            self.active = None

    def turn_started(self, e: TurnStarted) -> None:
        self._enter(e.turn_id, e.agent, e.kind)

    def token(self, e: TokenReceived) -> None:
        self._enter(e.turn_id, e.agent)
        self.streamed.add(e.turn_id)
        self._text(e.turn_id, e.text)

    def turn_retried(self, e: TurnRetried) -> None:
        self._enter(e.turn_id, e.agent)
        self.streamed.discard(e.turn_id)  # the text so far is discarded
        if e.turn_id in self.waiting:
            self.waiting[e.turn_id].clear()
        self._text(e.turn_id, f" [retrying, attempt {e.attempt}: {e.error}]")

    def turn_finished(self, e: TurnFinished) -> None:
        turn = e.turn
        self._enter(turn.id, turn.agent, turn.kind)
        if turn.id not in self.streamed and turn.content:
            self._text(turn.id, turn.content)
        if turn.status != "ok":
            self._text(turn.id, f" [{turn.status}: {turn.error or 'no detail'}]")
        self.done.add(turn.id)
        if turn.id == self.active:
            self._next()

    # -- everything else -----------------------------------------------------------------------
    def debate_started(self, e: DebateStarted) -> None:
        verb = "resumed" if e.resumed else "started"
        self._line(f"Debate {e.debate_id} {verb}: {e.config.get('question', '')}")

    def personas(self, e: PersonasAssigned) -> None:
        for label, persona in e.personas.items():
            if persona:
                self._line(f"  {label}: {persona}")

    def round_started(self, e: RoundStarted) -> None:
        self._line(f"\n=== Round {e.round} ({', '.join(e.order)}) ===")

    def vote(self, e: VoteCast) -> None:
        verdict = "" if e.valid else f"invalid ({e.reason or 'unparseable'})"
        self._line(f"  vote {e.agent}: {verdict or describe_ballot(e.ballot)}")

    def decision_attempted(self, e: DecisionAttempted) -> None:
        if not e.reached:
            self._line(f"  no decision in round {e.round} ({e.protocol}): {e.reason}")

    def decision_reached(self, e: DecisionReached) -> None:
        how = ", forced" if e.forced else ""
        winner = f" (from {e.winner_agent})" if e.winner_agent else ""
        self._line(f"\n== Decision ({e.protocol}, round {e.round}{how}): {e.answer}{winner}")
        if e.fallback:
            self._line(f"   fallback: {e.fallback}")

    def challenge(self, e: ChallengeResult) -> None:
        self._line(f"  {e.agent} {STANCES[e.agrees]}" + (f": proposes {e.new_answer}" if e.new_answer else ""))

    def steering(self, e: SteeringApplied) -> None:
        targets = f" -> {', '.join(e.targets)}" if e.targets else ""
        self._line(f"  [moderator] {e.action}{targets}" + (f": {e.message}" if e.message else ""))

    def error(self, e: ErrorOccurred) -> None:
        self._line(f"  error{f' ({e.agent})' if e.agent else ''}: {e.message}")

    def debate_finished(self, e: DebateFinished) -> None:
        answer = f" Answer: {e.answer}" if e.answer else ""
        reason = f" ({e.reason})" if e.reason else ""
        self._line(f"\nDebate {e.status}.{answer}{reason}")


@contextlib.contextmanager
def _stop_on_interrupt(controller: Any, what: str = "the debate") -> Iterator[None]:
    """First Ctrl-C asks the controller to stop; the second one raises KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        sys.stderr.write(f"\nStopping {what} (Ctrl-C again to quit now)...\n")
        controller.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _stream(events: Iterable[Event], controller: Any, store: Store, debate_id: Callable[[], str | None]) -> int:
    printer, status = Printer(sys.stdout), None
    with _stop_on_interrupt(controller):
        try:
            for event in events:
                printer(event)
                if isinstance(event, DebateFinished):
                    status = event.status
        except KeyboardInterrupt:
            status = "stopped"
            getattr(events, "close", lambda: None)()  # stops the engine and waits for its thread
            if debate_id() and (store.get_debate(debate_id()) or {}).get("status") == "running":
                store.set_status(debate_id(), status)
            print("\nDebate stopped.", file=sys.stderr)
    return EXIT_BY_STATUS.get(status, 1)


# ----- commands ------------------------------------------------------------------------------
def _store(args: argparse.Namespace) -> Store:
    try:
        store = Store(args.db)
        mark_dead_interrupted(store)  # a debate whose process is gone reads as interrupted
        return store
    except (sqlite3.Error, OSError) as exc:
        where = short_repr(str(args.db or default_db_path()))
        raise CliError(f"db: cannot open {where}: {clip(str(exc), 200)}") from None


def _text_arg(name: str, value: str, max_chars: int) -> str:
    """A text flag or argument that the database can take: bounded, valid Unicode."""
    if len(value) > max_chars:
        raise CliError(f"{name}: at most {max_chars:,} characters, got {len(value):,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 on the command line
        raise CliError(f"{name}: not valid UTF-8 text") from None
    return value


def _debate_id(store: Store, prefix: str) -> str:
    try:
        return store.find_debate_id(_text_arg("id", prefix, MAX_ID_CHARS))
    except LookupError as exc:
        raise CliError(str(exc)) from None


def cmd_run(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        raise CliError(f"{exc.field}: {exc.message}") from None
    missing = key_problems(config)  # before anything runs: no debate is written
    if missing:
        raise CliError("; ".join(f"{field}: {message}" for field, message in missing))
    from .controller import Controller
    from .engine import DebateEngine  # imported late: loads the model stack

    store, controller = _store(args), Controller()
    # --no-stream: each reply is asked for whole and printed when it is in (far less CPU a call)
    engine = DebateEngine(config, controller=controller, store=store, stream=not getattr(args, "no_stream", False))
    return _stream(engine.run(), controller, store, lambda: engine.debate_id)


def cmd_resume(args: argparse.Namespace) -> int:
    store = _store(args)
    debate_id = _debate_id(store, args.id)
    from .controller import Controller
    from .resume import prepare_resume

    controller = Controller()
    try:  # checks the debate and its models, then claims it; nothing changes when this fails
        engine = prepare_resume(debate_id, store, controller)
    except ResumeRefused as exc:
        raise CliError(str(exc)) from None
    except ConfigError as exc:
        raise CliError(f"debate {debate_id[:8]} cannot be resumed here: {exc.field}: {exc.message}") from None
    return _stream(engine.run(), controller, store, lambda: debate_id)


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def cmd_list(args: argparse.Namespace) -> int:
    # Refused rather than cut or clamped as the store would: the user asked for something else.
    if isinstance(args.limit, str) or not 1 <= args.limit <= MAX_LIST_LIMIT:
        raise CliError(f"limit: must be a whole number from 1 to {MAX_LIST_LIMIT:,}, got {short_repr(args.limit)}")
    search = None if args.search is None else _text_arg("search", args.search, MAX_QUERY_CHARS)
    protocol = None if args.protocol is None else _text_arg("protocol", args.protocol, MAX_QUERY_CHARS)
    rows = list_debates(_store(args), status=args.status, protocol=protocol, search=search, limit=args.limit)
    if not rows:
        print("No debates.")
        return 0
    print(f"{'ID':<10} {'CREATED':<16} {'STATUS':<11} {'PROTOCOL':<18} QUESTION")
    for row in rows:
        print(f"{row['id'][:8]:<10} {format_time(row['created_at']):<16} {row['status']:<11} "
              f"{(row['protocol'] or '-'):<18} {_one_line(row['question'], 60)}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = _store(args)
    sys.stdout.write(exports.to_markdown(store, _debate_id(store, args.id)))
    return 0


EXPORTERS: dict[str, Callable[[Store, str], str]] = {
    "json": lambda store, debate_id: json.dumps(exports.export_debate(store, debate_id), indent=2,
                                                ensure_ascii=False) + "\n",
    "md": exports.to_markdown,
    "csv": exports.to_csv,
    "class-csv": classroom.class_csv,  # the class's predictions: one row per student per poll
}


def cmd_export(args: argparse.Namespace) -> int:
    store = _store(args)
    text = EXPORTERS[args.format](store, _debate_id(store, args.id))
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8", newline="")
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
        print(f"Wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _read_json(path: str) -> Any:
    """The JSON document in a file (CliError when unreadable, too large, not UTF-8 or not JSON)."""
    try:
        text = read_text_file(path, MAX_IMPORT_BYTES)
    except ValueError as exc:
        raise CliError(f"{path}: {exc}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise CliError(f"{path}: not JSON that MAD Lab can read: nested too deeply") from None
    except ValueError as exc:  # a syntax error, or a number with too many digits to read
        raise CliError(f"{path}: not JSON: {clip(one_line(str(exc)), 200)}") from None


def cmd_import(args: argparse.Namespace) -> int:
    try:
        data = validate_export(_read_json(args.file))  # all of it, before anything is written
        store = _store(args)
        # Keep the exported id unless it is taken (or --new-id asks for a fresh one).
        taken = store.get_debate(data["debate"]["id"]) is not None
        debate_id = exports.import_debate(store, data, new_id=args.new_id or taken)
    except ExportError as exc:
        raise CliError(f"{args.file}: {exc.field}: {exc.message}") from None
    except ValueError as exc:  # e.g. the id was taken meanwhile
        raise CliError(f"{args.file}: {clip(str(exc), 300)}") from None
    print(debate_id)
    return 0


def _experiment_runner(args: argparse.Namespace, experiment_id: str, options: dict[str, Any]) -> Any:
    """The runner `--workers` / `--ray` ask for (experiments/workers.py, experiments/ray_runner.py), else
    the single-process `ExperimentRunner`."""
    from .experiments import ExperimentRunner

    if args.ray is not None:  # Ray tasks run the debates; this process alone writes the database
        from .experiments.ray_runner import RayRunner

        return RayRunner(experiment_id, address=None if args.ray == "local" else args.ray, **options)
    if (args.workers or 1) > 1:  # N processes over this store
        from .experiments.workers import WorkersRunner

        return WorkersRunner(experiment_id, workers=args.workers, **options)
    return ExperimentRunner(experiment_id, **options)


def _experiment_bundle(args: argparse.Namespace) -> int:
    """`experiment export ID ARCHIVE` and `experiment reproduce ARCHIVE` (experiments/bundle.py)."""
    from .experiments import bundle

    wanted = 2 if args.file == "export" else 1
    if len(args.more) != wanted:
        raise CliError("experiment: give `export ID ARCHIVE` or `reproduce ARCHIVE`")
    store = _store(args)
    try:
        if args.file == "export":
            manifest = bundle.export_bundle(store, _experiment_id(store, args.more[0]), args.more[1])
            print(f"Wrote {args.more[1]}: {bundle.manifest_text(manifest)}")
            return 0
        done = bundle.reproduce(args.more[0], store)  # Ctrl-C stops its runner's debates (resumable)
    except bundle.BundleError as exc:
        raise CliError(f"{args.more[-1]}: {exc.member}: {exc.message}") from None
    except (ConfigError, OSError, LookupError) as exc:
        raise CliError(str(exc)) from None
    print(f"Reproduced as experiment {done.experiment_id[:8]} ({done.status}; {done.cache_added} cached replies "
          f"added): " + ", ".join(f"{name} {'identical' if same else 'DIFFERENT'}" for name, same in done.same.items()))
    for name, lines in done.differences.items():
        for line in lines:
            print(f"  {name}: {line}")
    return 0 if done.identical else 1


def _experiment_line(progress: Any) -> str:
    """One terminal line per debate that ended: where the experiment stands, with an ETA."""
    from .experiments.runner import format_eta

    run = progress.run
    head = f"[{progress.done}/{progress.total}]"
    if run is None:
        return f"{head} started · {progress.failed} failed · {format_eta(progress.eta_s)}"
    error = f" ({one_line(run['error'])[:120]})" if run.get("error") else ""
    return (f"{head} {run['config_key']} {run['config_label']} · item {run['item_id']} · seed {run['seed']}: "
            f"{run['status']}{error} in {run['wall_s']:.1f} s · debate {str(run['debate_id'])[:8]} · "
            f"{progress.failed} failed · {format_eta(progress.eta_s)}")


def _experiment_results(store: Store, experiment_id: str, args: argparse.Namespace) -> None:
    """Print an experiment's results table; write the CSV files asked for."""
    from .experiments import publish, results, uncertainty

    found = results.experiment_results(store, experiment_id)
    print(f"\nExperiment {experiment_id[:8]} ({found.experiment['name']}): {found.experiment['status']} · "
          f"{results.spec_summary(found.experiment['spec'])}")
    print("accuracy with its 95 % interval (Wilson; items repeated: a bootstrap over items); vs a baseline: the "
          "difference with its paired-bootstrap interval and Holm-corrected exact McNemar p; other columns: mean ± "
          "sample sd over seeds and items; a debate without a decision counts as wrong\n")
    print(results.text_table(found.table, found.statistics))
    comparisons = uncertainty.comparison_records(found.statistics, found.labels)
    if comparisons:
        print("\nPaired comparisons (A − B on the same items and seeds):")
        for c in comparisons:
            print(f"  {c['a']}  vs  {c['b']}: {c['text']}")
    for problem in found.problems:
        print(f"note: {problem}", file=sys.stderr)
    outputs = ((args.csv, lambda: results.to_csv(results.table_records(found.table, found.statistics))),
               (args.runs_csv, lambda: results.to_csv(results.run_records(found.runs, found.configurations))),
               (args.comparisons_csv, lambda: results.to_csv(comparisons)),
               (args.report, lambda: publish.markdown_report(found)))
    for path, text in outputs:
        if path:
            try:
                Path(path).write_text(text(), encoding="utf-8", newline="")
            except OSError as exc:
                raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
            print(f"Wrote {path}", file=sys.stderr)


def _experiment_id(store: Store, prefix: str) -> str:
    from .experiments import storage

    try:
        return storage.find_experiment_id(store, _text_arg("id", prefix, MAX_ID_CHARS))
    except LookupError as exc:
        raise CliError(str(exc)) from None


def cmd_experiment(args: argparse.Namespace) -> int:
    from .experiments import ExperimentConfig, storage

    if args.file in ("export", "reproduce"):
        return _experiment_bundle(args)
    if args.more:
        raise CliError(f"experiment: unexpected {' '.join(args.more)!r} after the file")
    chosen = [name for name in ("file", "resume", "show", "list") if getattr(args, name)]
    if len(chosen) != 1:
        raise CliError("experiment: give one of FILE, --resume ID, --show ID or --list")
    if args.concurrency is not None and (isinstance(args.concurrency, str) or not 1 <= args.concurrency <= 64):
        raise CliError(f"concurrency: must be a whole number from 1 to 64, got {short_repr(args.concurrency)}")
    if args.workers is not None and (isinstance(args.workers, str) or not 1 <= args.workers <= 32):
        raise CliError(f"workers: must be a whole number from 1 to 32, got {short_repr(args.workers)}")
    if args.ray is not None and (args.workers or 1) > 1:
        raise CliError("experiment: give --ray or --workers, not both")
    if args.list:
        rows = storage.list_experiments(_store(args))
        if not rows:
            print("No experiments.")
        for row in rows:
            print(f"{row['id'][:8]:<10} {format_time(row['created_at']):<16} {row['status']:<11} "
                  f"{row['done']}/{row['total']} done, {row['failed']} failed  {_one_line(row['name'], 50)}")
        return 0
    if args.file:
        try:  # everything is checked before the database is opened
            experiment = ExperimentConfig.load(Path(args.file))
        except ConfigError as exc:
            raise CliError(f"{args.file}: {exc.field}: {exc.message}") from None
        store = _store(args)
        experiment_id = storage.create_experiment(store, experiment)
        print(f"Experiment {experiment_id} ({experiment.name}): {experiment.total} debates, "
              f"{len(experiment.configurations)} configurations × {len(experiment.task_items)} items × "
              f"{len(experiment.seeds)} seeds")
    else:
        store = _store(args)
        experiment_id = _experiment_id(store, args.resume or args.show)
        if args.show:
            _experiment_results(store, experiment_id, args)
            return 0
    options: dict[str, Any] = dict(db_path=store.path, concurrency=args.concurrency,
                                   on_progress=lambda progress: print(_experiment_line(progress), flush=True))
    runner = _experiment_runner(args, experiment_id, options)
    try:
        with _stop_on_interrupt(runner, "the experiment"):
            status = runner.run()
    except (storage.ExperimentBusy, LookupError, RuntimeError) as exc:  # RuntimeError: ray_runner.RayUnavailable
        raise CliError(str(exc)) from None
    except ConfigError as exc:
        raise CliError(f"experiment {experiment_id[:8]} cannot run here: {exc.field}: {exc.message}") from None
    except KeyboardInterrupt:
        status = "stopped"
    _experiment_results(store, experiment_id, args)
    if runner.error and status != "failed":  # a worker process that died (its debates are resumable)
        print(f"note: {runner.error}", file=sys.stderr)
    if status == "stopped":
        print(f"\nExperiment stopped. Resume it with: python -m mad_core experiment --resume {experiment_id[:8]}",
              file=sys.stderr)
    return EXIT_BY_STATUS.get(status, 1)


def cmd_cache(args: argparse.Namespace) -> int:
    """`cache stats`: the response cache's entries, size and file; `cache clear`: empty it (asks nothing)."""
    from .models.response_cache import ResponseCache

    cache = ResponseCache("readwrite")  # in this MAD Lab home, whatever --db names
    try:
        if args.action == "clear":
            removed = cache.clear()
            print(f"Removed {removed} {'entry' if removed == 1 else 'entries'} from the response cache ({cache.path}).")
            return 0
        stats = cache.stats()
    except sqlite3.Error as exc:
        raise CliError(f"cache: cannot open {short_repr(str(cache.path))}: {clip(str(exc), 200)}") from None
    finally:
        cache.close()
    print(f"Response cache: {stats['path']}")
    print(f"  entries: {stats['entries']}")
    print(f"  size:    {_size_text(stats['bytes'])}")
    if stats["entries"]:
        print(f"  oldest:  {format_time(stats['oldest'])}, newest: {format_time(stats['newest'])}")
    return 0


def _size_text(size: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit} ({size:,} bytes)"
    return f"{size:,} bytes"


def _experiment_parser(sub: Any) -> None:
    """The `experiment` subcommand's arguments."""
    experiment = sub.add_parser("experiment", help="run a sweep of debates over a task set (YAML file), "
                                                   "resume one, or show results")
    experiment.add_argument("file", nargs="?", help="experiment YAML/JSON (see assets/experiments/); or `export ID "
                                                    "ARCHIVE` (one zip: spec, resolved configurations, provenance, "
                                                    "results and the cached replies it used), or `reproduce ARCHIVE` "
                                                    "(rerun it offline from its cached replies and compare the tables)")
    experiment.add_argument("more", nargs="*", help=argparse.SUPPRESS)
    experiment.add_argument("--resume", metavar="ID", help="continue a stopped or interrupted experiment")
    experiment.add_argument("--show", metavar="ID", help="print a stored experiment's results table")
    experiment.add_argument("--list", action="store_true", help="list stored experiments, newest first")
    experiment.add_argument("--concurrency", type=whole_number, help="debates at once (overrides the file's)")
    experiment.add_argument("--ray", metavar="ADDRESS", help="run the debates as Ray tasks: HEAD:PORT or auto (a "
                            "running cluster), or local (a Ray of this machine); this process alone writes the database")
    experiment.add_argument("--workers", type=whole_number, help="run the debates in this many processes (1-32) "
                                                                 "over the one database, the concurrency shared "
                                                                 "among them (default 1: this process)")
    experiment.add_argument("--csv", help="write the results table (one row per configuration) to this CSV file")
    experiment.add_argument("--runs-csv", help="write one row per debate to this CSV file")
    experiment.add_argument("--comparisons-csv", help="write every paired comparison (differences, intervals, "
                                                      "McNemar and Holm p, effect sizes) to this CSV file")
    experiment.add_argument("--report", help="write a Markdown results report (tables, comparisons, what "
                                             "discussion changed, how each figure was computed) to this file")
    experiment.set_defaults(func=cmd_experiment)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mad_core", description="MAD Lab: multi-agent LLM debates.")
    parser.add_argument("--db", help="database file (default: $MADLAB_HOME/madlab.db, ~/.madlab/madlab.db)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a debate, streaming it to the terminal")
    run.add_argument("--preset", help=f"a preset of assets/presets ({', '.join(sorted(p.stem for p in PRESET_DIR.glob('*.yaml')))}); "
                                      "--config and flags override it")
    run.add_argument("--config", help="YAML or JSON settings file; flags override it")
    run.add_argument("--question")
    run.add_argument("--agents", type=whole_number, help=f"number of agents (1-{MAX_AGENTS})")
    run.add_argument("--model", help="model for every agent, e.g. local/smollm2-135m")
    run.add_argument("--protocol")
    run.add_argument("--paradigm")
    run.add_argument("--rounds", type=whole_number)
    run.add_argument("--max-rounds", type=whole_number)
    run.add_argument("--seed", type=whole_number)
    run.add_argument("--tit-for-tat", type=whole_number, help="0-3")
    run.add_argument("--ordering")
    run.add_argument("--response-generator")
    run.add_argument("--judge-model")
    run.add_argument("--cache", help="the response cache: off (default), read (stored replies only) or readwrite")
    run.add_argument("--no-stream", action="store_true", help="ask for each reply whole and print it when it is in "
                                                                "(far less CPU a call than streaming it)")
    run.set_defaults(func=cmd_run)

    lister = sub.add_parser("list", help="list stored debates, newest first")
    lister.add_argument("--status", choices=DEBATE_STATUSES)
    lister.add_argument("--protocol")
    lister.add_argument("--search", help="full-text search over turns, annotations and questions")
    lister.add_argument("--limit", type=whole_number, default=200, help=f"at most this many (1-{MAX_LIST_LIMIT:,})")
    lister.set_defaults(func=cmd_list)

    show = sub.add_parser("show", help="print a debate's transcript (an id prefix is enough)")
    show.add_argument("id")
    show.set_defaults(func=cmd_show)

    export = sub.add_parser("export", help="export a debate as JSON, Markdown or CSV (class-csv: the class's "
                                           "predictions, one row per student per poll)")
    export.add_argument("id")
    export.add_argument("--format", choices=sorted(EXPORTERS), default="json")
    export.add_argument("-o", "--output", help="file to write (default: stdout)")
    export.set_defaults(func=cmd_export)

    importer = sub.add_parser("import", help="import a JSON export; prints the debate id")
    importer.add_argument("file")
    importer.add_argument("--new-id", action="store_true", help="always give the debate a fresh id")
    importer.set_defaults(func=cmd_import)

    resume = sub.add_parser("resume", help="continue an interrupted or stopped debate")
    resume.add_argument("id")
    resume.set_defaults(func=cmd_resume)

    _experiment_parser(sub)

    cache = sub.add_parser("cache", help="the response cache of this MAD Lab home: its size, or empty it")
    cache.add_argument("action", choices=("stats", "clear"), help="stats: entries, size and file; "
                                                                   "clear: remove every entry")
    cache.set_defaults(func=cmd_cache)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before a debate started (e.g. while models load)
        print("\nInterrupted.", file=sys.stderr)
        return EXIT_BY_STATUS["stopped"]
