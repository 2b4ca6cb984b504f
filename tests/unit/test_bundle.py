"""Provenance and the reproduction bundle (issue 21, item 5): a sweep records its git revision,
package versions and model digests; `experiment export ID ARCHIVE` writes one zip; `experiment
reproduce ARCHIVE` reruns it in another home, offline, from the cached replies it carries, to the
same tables, asking no model; an altered archive is refused naming the member, before anything
is written.
"""
from __future__ import annotations

import json
import subprocess
import zipfile

import pytest

from mad_core import cli
from mad_core.experiments import bundle, storage
from mad_core.experiments.provenance import REPO
from mad_core.models.response_cache import ResponseCache
from mad_core.store import Store
from test_baselines import cheap_embed, run_sweep


@pytest.fixture
def finished(script):
    """A finished sweep with baselines (cache on, as sweeps have it) and its scripted model."""
    store, experiment_id, _, calls = run_sweep(script, baselines=["single", {"name": "self_consistency", "k": 3}])
    return store, experiment_id, calls


def test_a_sweep_records_its_revision_packages_and_models(finished):
    store, experiment_id, _ = finished
    record = storage.get_experiment(store, experiment_id)
    made = record["provenance"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if head.returncode == 0:
        assert made["revision"]["commit"] == head.stdout.strip() and isinstance(made["revision"]["dirty"], bool)
    else:
        assert made["revision"]["commit"] is None and made["revision"]["note"]
    import statsmodels

    assert made["packages"]["statsmodels"] == statsmodels.__version__ and "litellm" in made["packages"]
    model = record["spec"]["base"]["models"]
    assert made["models"] == {model: model}  # not a local GGUF: its name is its identity
    assert [c["key"] for c in record["configurations"]] == ["c1", "b1", "b2"]


def test_export_then_reproduce_in_another_home_asks_no_model_and_gives_the_same_tables(
        finished, tmp_path, monkeypatch, capsys):
    store, experiment_id, calls = finished
    archive = tmp_path / "sweep.zip"
    assert cli.main(["experiment", "export", experiment_id[:8], str(archive)]) == 0
    with zipfile.ZipFile(archive) as opened:
        assert sorted(opened.namelist()) == sorted(["manifest.json", *bundle.MEMBERS])
        manifest = json.loads(opened.read("manifest.json"))
        entries = opened.read("cache.jsonl").decode().splitlines()
    assert manifest["cache_entries"] == len(entries) > 0
    # Another home: an empty database and an empty cache; the network is off.
    monkeypatch.setenv("MADLAB_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    made = calls.calls
    capsys.readouterr()
    assert cli.main(["experiment", "reproduce", str(archive)]) == 0
    out = capsys.readouterr().out
    assert "results.csv identical, comparisons.csv identical" in out
    assert calls.calls == made  # must not: a model asked again
    again = Store()
    rerun = storage.list_experiments(again)
    assert len(rerun) == 1 and rerun[0]["status"] == "finished"
    assert ResponseCache("read").stats()["entries"] == len(entries)


def test_an_altered_or_incomplete_archive_is_refused_by_member_and_nothing_is_written(finished, tmp_path, monkeypatch):
    store, experiment_id, _ = finished
    archive = tmp_path / "sweep.zip"
    bundle.export_bundle(store, experiment_id, archive, embed=cheap_embed)
    with zipfile.ZipFile(archive) as opened:
        members = {name: opened.read(name) for name in opened.namelist()}
    altered = tmp_path / "altered.zip"
    with zipfile.ZipFile(altered, "w") as out:
        for name, blob in members.items():
            out.writestr(name, blob.replace(b'"seeds": [', b'"seeds": [7, ') if name == "spec.json" else blob)
    missing = tmp_path / "missing.zip"
    with zipfile.ZipFile(missing, "w") as out:
        for name, blob in members.items():
            if name != "cache.jsonl":
                out.writestr(name, blob)
    not_zip = tmp_path / "not.zip"
    not_zip.write_text("hello")
    monkeypatch.setenv("MADLAB_HOME", str(tmp_path / "elsewhere"))
    for path, member in ((altered, "spec.json"), (missing, "cache.jsonl"), (not_zip, "archive")):
        with pytest.raises(bundle.BundleError) as caught:
            bundle.reproduce(path, Store())
        assert caught.value.member == member
    assert storage.list_experiments(Store()) == [] and ResponseCache("read").stats()["entries"] == 0


def test_a_sweep_over_the_researchers_own_file_carries_it_and_reruns_where_the_file_never_was(
        script, tmp_path, monkeypatch):
    """`task_set: {file: ...}`: the archive holds the file (digest in the manifest); reproduced in
    another home after the original is gone, it is read from the archive's copy, to the same tables.
    A manifest naming any other member as the task file is refused before anything is written."""
    from mad_core.experiments import ExperimentConfig, ExperimentRunner, create_experiment

    data = tmp_path / "my questions.jsonl"
    data.write_text("\n".join(json.dumps({"qid": f"q{i}", "prompt": f"What is {i} + {i}?", "gold": str(2 * i)})
                              for i in range(3)))
    model, calls = script(lambda messages, info: "Adding them up.\nFinal answer: 2")
    spec = {"name": "own file", "task_set": {"file": str(data), "columns": {"id": "qid", "question": "prompt",
                                                                           "answer": "gold"}, "answer_type": "number"},
            "items": 3, "seeds": [1], "base": {"models": model, "rounds": 1, "protocol": "simple_voting"}}
    store = Store()
    experiment_id = create_experiment(store, ExperimentConfig.from_dict(spec))
    assert ExperimentRunner(experiment_id, embed=cheap_embed).run() == "finished"
    archive = tmp_path / "sweep.zip"
    manifest = bundle.export_bundle(store, experiment_id, archive, embed=cheap_embed)
    assert manifest["task_file"] == "task_file/my_questions.jsonl"
    with zipfile.ZipFile(archive) as opened:
        assert opened.read("task_file/my_questions.jsonl") == data.read_bytes()
        members = {name: opened.read(name) for name in opened.namelist()}
    original = data.read_bytes()
    data.unlink()
    monkeypatch.setenv("MADLAB_HOME", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    made = len(calls.history)
    again = bundle.reproduce(archive, Store(), embed=cheap_embed)
    assert again.identical and len(calls.history) == made
    rerun = storage.get_experiment(Store(), again.experiment_id)
    placed = rerun["spec"]["task_set"]["file"]
    assert placed.startswith(str(tmp_path / "elsewhere" / "bundles")) and open(placed, "rb").read() == original
    # must not: a manifest that points the task file anywhere else
    for name in ("../escape.jsonl", "spec.json", "task_file/../../x.jsonl"):
        forged = {**json.loads(members["manifest.json"]), "task_file": name}
        path = tmp_path / "forged.zip"
        with zipfile.ZipFile(path, "w") as out:
            for member, blob in members.items():
                out.writestr(member, json.dumps(forged) if member == "manifest.json" else blob)
        monkeypatch.setenv("MADLAB_HOME", str(tmp_path / "third"))
        with pytest.raises(bundle.BundleError) as caught:
            bundle.reproduce(path, Store())
        assert caught.value.member == "manifest.json"
        assert storage.list_experiments(Store()) == [] and not (tmp_path / "third" / "bundles").exists()
