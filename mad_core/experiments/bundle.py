"""A sweep as one archive that reruns offline to the same tables (`python -m mad_core experiment
export ID ARCHIVE` / `experiment reproduce ARCHIVE`).

The archive is a zip of plain files: `manifest.json` (format, version, the experiment's id and
name, the sha256 of every other member), `spec.json` (the spec as given), `configurations.json`
(the resolved configurations), `provenance.json` (git revision, packages, model digests: see
`provenance`), the results as they were (`results.csv`, `comparisons.csv`, `debates.csv`,
`report.md`) and `cache.jsonl`: every response-cache entry the sweep's debates stored or read
(`ResponseCache.entries_for`). A sweep over the researcher's own file (`task_set: {file: ...}`)
carries that file too, as `task_file/<its name>` (named in the manifest's `task_file`), so the
archive reruns on a machine that never had it; a Hugging Face dataset (`task_set: {hf: ...}`) is
named, not carried: it is read again from the `datasets` cache (its `revision` pins it).
Reproducing adds the cache entries to this home's cache (those already there stay), puts a
carried task file under `<home>/bundles/<its digest>/` and points the spec at it, creates a new
experiment from the spec, runs it (every call a cache hit, so no model is asked and no network
is needed) and compares its results table and comparisons with the archived ones, file for file.

Reading an archive trusts nothing: only the named members are read, each bounded in size,
each checked against the manifest's digest, the JSON bounded in depth like a debate export; a
member that is missing, too large or altered is refused naming it, before anything is written.
"""
from __future__ import annotations

import hashlib
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..export_schema import ExportError, read_export_text
from ..models.response_cache import ResponseCache
from ..store import Store, madlab_home
from . import publish, results, storage, uncertainty
from .runner import ExperimentRunner
from .spec import ExperimentConfig

FORMAT, VERSION = "madlab-experiment-bundle", 1
MAX_MEMBER_BYTES = 200_000_000
TABLES = ("results.csv", "comparisons.csv")  # what a reproduction must give again, byte for byte
MEMBERS = ("spec.json", "configurations.json", "provenance.json", *TABLES, "debates.csv", "report.md", "cache.jsonl")
TASK_FILE_MEMBER = re.compile(r"task_file/[A-Za-z0-9][A-Za-z0-9._-]{0,120}\Z")  # our own naming; nothing else is read


class BundleError(ValueError):
    """An archive that cannot be read or reproduced; `member` names the part at fault."""

    def __init__(self, member: str, message: str):
        self.member, self.message = member, message
        super().__init__(f"{member}: {message}")


def _tables(found: results.Results) -> dict[str, str]:
    comparisons = uncertainty.comparison_records(found.statistics, found.labels)
    return {"results.csv": results.to_csv(results.table_records(found.table, found.statistics)),
            "comparisons.csv": results.to_csv(comparisons)}


def export_bundle(store: Store, experiment_id: str, path: str | Path, *, embed: Any = None) -> dict[str, Any]:
    """Write the archive of one stored experiment to `path`; returns its manifest."""
    record = storage.get_experiment(store, experiment_id)
    if record is None:
        raise LookupError(f"no experiment with id {experiment_id!r}")
    found = results.experiment_results(store, experiment_id, embed=embed)
    debates = [run["debate_id"] for run in found.runs if run.get("debate_id")]
    entries = ResponseCache("read").entries_for(debates)
    files = {"spec.json": json.dumps(record["spec"], ensure_ascii=False, indent=1),
             "configurations.json": json.dumps(found.configurations, ensure_ascii=False, indent=1),
             "provenance.json": json.dumps(record.get("provenance"), ensure_ascii=False, indent=1),
             **_tables(found),
             "debates.csv": results.to_csv(results.run_records(found.runs, found.configurations)),
             "report.md": publish.markdown_report(found),
             "cache.jsonl": "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries)}
    data = {name: text.encode("utf-8") for name, text in files.items()}
    task_file = _task_file(record["spec"])
    if task_file is not None:
        data[task_file[0]] = task_file[1]
    manifest = {"format": FORMAT, "version": VERSION, "experiment_id": experiment_id, "name": record["name"],
                "status": record["status"], "cache_entries": len(entries),
                "task_file": task_file[0] if task_file else None,
                "sha256": {name: hashlib.sha256(blob).hexdigest() for name, blob in data.items()}}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest, indent=1))
        for name, blob in data.items():
            archive.writestr(name, blob)
    return manifest


def _task_file(spec: dict[str, Any]) -> tuple[str, bytes] | None:
    """The member name and bytes of the researcher's task file a spec reads, if it reads one."""
    source = spec.get("task_set")
    if not isinstance(source, dict) or not isinstance(source.get("file"), str):
        return None
    path = Path(source["file"])
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise BundleError("task_file", f"the sweep's task file {path} cannot be read ({exc.strerror})") from None
    if len(blob) > MAX_MEMBER_BYTES:
        raise BundleError("task_file", f"the sweep's task file is larger than {MAX_MEMBER_BYTES // 1_000_000} MB")
    name = re.sub(r"[^A-Za-z0-9._-]", "_", path.name).lstrip("._-") or "tasks"
    return f"task_file/{name[:120]}", blob


def _member(archive: zipfile.ZipFile, name: str) -> bytes:
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise BundleError(name, "missing from the archive") from None
    if info.file_size > MAX_MEMBER_BYTES:
        raise BundleError(name, f"larger than {MAX_MEMBER_BYTES // 1_000_000} MB")
    with archive.open(info) as stream:
        blob = stream.read(MAX_MEMBER_BYTES + 1)
    if len(blob) > MAX_MEMBER_BYTES:
        raise BundleError(name, f"larger than {MAX_MEMBER_BYTES // 1_000_000} MB")
    return blob


def _json(name: str, blob: bytes) -> Any:
    try:
        return read_export_text(blob)
    except ExportError as exc:
        raise BundleError(name, exc.message) from None


def read_bundle(path: str | Path) -> dict[str, Any]:
    """The archive's members, checked: {"manifest", "spec", "tables", "cache"} (BundleError otherwise)."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BundleError("archive", f"not a readable zip archive ({exc})") from None
    with archive:
        manifest = _json("manifest.json", _member(archive, "manifest.json"))
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
            raise BundleError("manifest.json", f"not a {FORMAT} version {VERSION} archive")
        digests = manifest.get("sha256") if isinstance(manifest.get("sha256"), dict) else {}
        blobs = {}
        for name in MEMBERS:
            blob = _member(archive, name)
            if digests.get(name) != hashlib.sha256(blob).hexdigest():
                raise BundleError(name, "its content does not match the manifest's digest")
            blobs[name] = blob
        task_file = manifest.get("task_file")
        if task_file is not None:
            if not isinstance(task_file, str) or not TASK_FILE_MEMBER.match(task_file):
                raise BundleError("manifest.json", "its task_file is not a task_file/<name> member")
            blob = _member(archive, task_file)
            if digests.get(task_file) != hashlib.sha256(blob).hexdigest():
                raise BundleError(task_file, "its content does not match the manifest's digest")
            blobs[task_file] = blob
    cache = [_json("cache.jsonl", line) for line in blobs["cache.jsonl"].splitlines() if line.strip()]
    return {"manifest": manifest, "spec": _json("spec.json", blobs["spec.json"]),
            "tables": {name: blobs[name].decode("utf-8") for name in TABLES}, "cache": cache,
            "task_file": (task_file, blobs[task_file]) if task_file is not None else None}


def _place_task_file(spec: Any, task_file: tuple[str, bytes] | None) -> tuple[Any, Path | None]:
    """The spec reading a carried task file from `<home>/bundles/<digest>/<name>`, and that path if
    this call wrote it (None when there is no file or it was there already)."""
    if task_file is None or not isinstance(spec, dict) or not isinstance(spec.get("task_set"), dict):
        return spec, None
    name, blob = task_file
    folder = madlab_home() / "bundles" / hashlib.sha256(blob).hexdigest()[:16]
    path = folder / name.split("/", 1)[1]
    written = None
    if not path.is_file() or path.read_bytes() != blob:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
        written = path
    return {**spec, "task_set": {**spec["task_set"], "file": str(path)}}, written


@dataclass
class Reproduction:
    """A rerun of an archive: the new experiment, its status, and which tables came out the same."""

    experiment_id: str
    status: str
    cache_added: int
    same: dict[str, bool]
    differences: dict[str, list[str]]

    @property
    def identical(self) -> bool:
        return self.status == "finished" and all(self.same.values())


def _differences(old: str, new: str) -> list[str]:
    before, after = old.splitlines(), new.splitlines()
    changed = [f"line {i + 1}: was {a!r}, now {b!r}" for i, (a, b) in enumerate(zip(before, after)) if a != b]
    if len(before) != len(after):
        changed.append(f"{len(before)} lines before, {len(after)} now")
    return changed[:20]


def reproduce(path: str | Path, store: Store, *, runner_factory: Any = None, embed: Any = None) -> Reproduction:
    """Rerun an archive here (see the module docstring). `runner_factory(experiment_id)` makes the
    runner (default: `ExperimentRunner` on `store`'s file)."""
    bundle = read_bundle(path)
    spec, placed = _place_task_file(bundle["spec"], bundle["task_file"])
    try:
        experiment = ExperimentConfig.from_dict(spec)
    except ValueError as exc:
        if placed is not None:  # nothing is left behind by an archive that is refused
            placed.unlink(missing_ok=True)
        raise BundleError("spec.json", str(exc)) from None
    try:
        added = ResponseCache("readwrite").import_entries(bundle["cache"])
    except ValueError as exc:
        raise BundleError("cache.jsonl", str(exc)) from None
    experiment_id = storage.create_experiment(store, experiment)
    if runner_factory is None:
        def runner_factory(new_id: str) -> Any:
            return ExperimentRunner(new_id, db_path=store.path, embed=embed)
    status = runner_factory(experiment_id).run()
    tables = _tables(results.experiment_results(store, experiment_id, embed=embed))
    same = {name: tables[name] == bundle["tables"][name] for name in TABLES}
    return Reproduction(experiment_id, status, added, same,
                        {name: _differences(bundle["tables"][name], tables[name]) for name in TABLES if not same[name]})


def manifest_text(manifest: dict[str, Any]) -> str:
    """One line about an archive for a terminal."""
    return (f"{manifest.get('name')} ({str(manifest.get('experiment_id'))[:8]}, {manifest.get('status')}): "
            f"{manifest.get('cache_entries')} cached replies")


__all__ = ["BundleError", "Reproduction", "export_bundle", "read_bundle", "reproduce", "manifest_text"]
