"""Experiments: sweeps of debates over a task set, stored, resumable and summarised (issue 9).

  * ``spec``     `ExperimentConfig`: a validated sweep (task set, items, seeds, a grid over any
                 debate setting) and its plan, one debate per configuration × item × seed.
  * ``storage``  the `experiments` / `experiment_runs` tables (migration m004): create, claim,
                 list, link each planned debate to its stored debate.
  * ``runner``   `ExperimentRunner`: runs the plan with a concurrency bound through the normal
                 engine, reports progress with an ETA, stops cleanly and resumes.
  * ``results``  the table per configuration (mean ± sd over seeds and items), plot data, CSV.

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
