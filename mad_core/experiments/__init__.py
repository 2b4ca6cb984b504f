"""Experiments: sweeps of debates over a task set, stored, resumable and summarised (issue 9).

  * ``spec``     `ExperimentConfig`: a validated sweep (task set, items, seeds, a grid over any
                 debate setting) and its plan, one debate per configuration × item × seed.
  * ``storage``  the `experiments` / `experiment_runs` tables (migration m004): create, claim,
                 list, link each planned debate to its stored debate.
  * ``runner``   `ExperimentRunner`: runs the plan with a concurrency bound through the normal
                 engine, reports progress with an ETA, stops cleanly and resumes.
  * ``baselines`` single agent, self-consistency (k matched to the call budget) and the independent
                 vote, derived from each configuration and run on the same items and seeds.
  * ``results``  the table per configuration (mean ± sd over seeds and items), plot data, CSV.
  * ``stats`` / ``uncertainty``  intervals (Wilson, item-clustered bootstrap), paired tests (exact
                 McNemar, paired bootstrap), Holm, effect sizes, what discussion changed.
  * ``publish``  the Markdown results report.  ``provenance``: git revision, packages, model digests.
  * ``bundle``   one archive per sweep that reruns offline from its cached replies to the same tables.

UI-free: nothing here imports streamlit; the CLI (`python -m mad_core experiment`) and the
Experiments page both use it.
"""
from __future__ import annotations

from .results import Results, experiment_results
from .runner import ExperimentRunner, Progress, progress_of, start_background
from .spec import ExperimentConfig, expand_grid
from .storage import create_experiment, get_experiment, list_experiments

__all__ = ["ExperimentConfig", "expand_grid", "create_experiment", "get_experiment", "list_experiments",
           "ExperimentRunner", "Progress", "progress_of", "start_background", "Results", "experiment_results"]
