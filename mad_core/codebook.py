"""The codebook: annotation tags shared by the whole archive, and annotating turns with them.

A tag's name is unique whatever its case (the `tags` table, migration m006 here), and has a
palette colour (`TAG_COLOURS`, names Streamlit's markdown knows; `free_tag_colour` picks a new
tag's). `annotate` tags a turn (adding a tag the codebook lacks, writing one it holds in
another case in the codebook's spelling); tags are renamed, recoloured and deleted (only when
unused) in one transaction each. Annotations themselves are debate rows (`Store.annotations`).
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any, Iterable

from sqlite_utils import Database

from .store import Store
from .store.migrations import feature_migrations
from .text import clean_text

# The codebook (m006): the tags every archive starts with, the palette a tag's colour comes from
# (colour names Streamlit's markdown knows), and the longest tag name.
DEFAULT_TAGS = ("sycophancy", "new argument", "flip", "error", "hallucination", "good point", "off topic")
TAG_COLOURS = ("blue", "green", "orange", "red", "violet", "gray", "yellow")
MAX_TAG_CHARS = 60


def free_tag_colour(used: Iterable[str]) -> str:
    """The colour a new tag gets: a palette colour no tag has (the first in palette order) while one
    is free; once every colour is taken, the one fewest tags have (ties: palette order). `used`: the
    colours of the codebook's tags."""
    counts = Counter(colour for colour in used if colour in TAG_COLOURS)
    return min(TAG_COLOURS, key=lambda colour: (counts[colour], TAG_COLOURS.index(colour)))


def tag_name(text: Any, field: str = "tag") -> str:
    """A codebook tag name: whitespace collapsed, 1..MAX_TAG_CHARS characters; else ValueError naming
    `field` ("tag" on an annotation, "new tag" when adding one, "new name" when renaming)."""
    name = " ".join(clean_text(str(text or "")).replace("\x00", " ").split())
    if not name:
        if field == "tag":
            raise ValueError("tag: an annotation needs a tag (pick one from the codebook or type a new one)")
        raise ValueError(f"{field}: a tag needs a name")
    if len(name) > MAX_TAG_CHARS:
        raise ValueError(f"{field}: at most {MAX_TAG_CHARS} characters (got {len(name)})")
    return name


# The codebook's tables (recorded with the store's migrations: see mad_core/store/migrations.py).
MIGRATIONS = feature_migrations()


@MIGRATIONS()
def m006_codebook(db: Database) -> None:
    """The shared codebook of annotation tags (names unique whatever their case, a palette colour),
    filled with the default tags and every tag already used (annotations are rewritten to their
    codebook spelling); who wrote an annotation; moderator messages searchable (steering FTS)."""
    db.execute("CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE, "
               "colour TEXT NOT NULL, created_at FLOAT)")
    db["annotations"].add_column("annotator", str)
    used = [row["tag"] for row in db.query("SELECT tag FROM annotations GROUP BY tag ORDER BY MIN(id)")]
    now = time.time()
    for name in dict.fromkeys([*DEFAULT_TAGS, *used]):
        count = db.execute("SELECT COUNT(*) FROM tags").fetchone()[0]
        db.execute("INSERT OR IGNORE INTO tags (name, colour, created_at) VALUES (?, ?, ?)",
                   [name, TAG_COLOURS[count % len(TAG_COLOURS)], now])
    db.execute("UPDATE annotations SET tag = (SELECT name FROM tags WHERE tags.name = annotations.tag)")
    db["steering"].enable_fts(["message"], create_triggers=True)


def annotate(store: Store, debate_id: str, turn_id: str, tag: str, note: str = "", annotator: str = "") -> int:
    """Tag a turn (with a note, and who tagged it). A tag the codebook lacks is added to it; one
    it holds in another case is written in the codebook's spelling."""
    tag = tag_name(tag)
    with store.transaction():
        tag = ensure_tag(store, tag)
        return store.insert("annotations", {"debate_id": debate_id, "turn_id": turn_id, "tag": tag,
                                            "note": note, "annotator": " ".join(str(annotator or "").split())
                                            or None, "created_at": time.time()})


def delete_annotation(store: Store, annotation_id: int, *, turn_id: str | None = None) -> bool:
    """Delete one annotation by its id (only when it is on `turn_id`, if given: a button drawn for
    an annotation since deleted never removes another). True when one was deleted."""
    where, args = ("id = ?", [annotation_id]) if turn_id is None else ("id = ? AND turn_id = ?",
                                                                      [annotation_id, turn_id])
    with store.transaction() as db:
        return db.execute(f"DELETE FROM annotations WHERE {where}", args).rowcount > 0


def tags_of_debates(store: Store, debate_ids: list[str]) -> dict[str, list[str]]:
    """debate id -> the distinct tags on its turns, by name (debates without any are left out)."""
    found: dict[str, set[str]] = {}
    for start in range(0, len(debate_ids), 500):  # SQLite's limit on bound parameters
        chunk = list(debate_ids[start:start + 500])
        marks = ",".join("?" * len(chunk))
        for row in store.query(f"SELECT DISTINCT debate_id, tag FROM annotations WHERE debate_id IN ({marks})",
                               chunk):
            found.setdefault(row["debate_id"], set()).add(row["tag"])
    return {key: sorted(tags, key=str.lower) for key, tags in found.items()}


def tags(store: Store) -> list[dict[str, Any]]:
    """The codebook by name: each tag's id, name, colour, annotations using it (`count`) and
    debates they are in (`debates`)."""
    sql = ("SELECT t.id, t.name, t.colour, t.created_at, COUNT(a.id) AS count, "
           "COUNT(DISTINCT a.debate_id) AS debates FROM tags t LEFT JOIN annotations a ON a.tag = t.name "
           "GROUP BY t.id ORDER BY t.name COLLATE NOCASE")
    return store.query(sql)


def tag(store: Store, name: str) -> dict[str, Any] | None:
    """The codebook entry named `name` (any case), or None."""
    rows = store.query("SELECT id, name, colour, created_at FROM tags WHERE name = ?", [str(name)])
    return rows[0] if rows else None


def ensure_tag(store: Store, name: str, colour: str | None = None) -> str:
    """The codebook's spelling of `name`, adding it (`free_tag_colour` unless `colour` is given) when
    missing. Runs in a write."""
    found = tag(store, name)
    if found is not None:
        return found["name"]
    with store.transaction() as db:
        colour = colour or free_tag_colour(row[0] for row in db.execute("SELECT colour FROM tags"))
        db.execute("INSERT INTO tags (name, colour, created_at) VALUES (?, ?, ?)", [name, colour, time.time()])
    return name


def _check_colour(colour: Any) -> None:
    if colour not in TAG_COLOURS:
        raise ValueError(f"colour: {colour!r} is not in the palette ({', '.join(TAG_COLOURS)})")


def add_tag(store: Store, name: str, colour: str | None = None) -> str:
    """Add a tag to the codebook (a name it holds in any case is not added twice, whatever the
    threads or processes); returns the codebook's spelling."""
    name = tag_name(name, "new tag")
    if colour is not None:
        _check_colour(colour)
    with store.transaction():
        return ensure_tag(store, name, colour)


def _tag_or_fail(store: Store, name: str) -> dict[str, Any]:
    found = tag(store, name)
    if found is None:
        raise LookupError(f"tag: the codebook has no tag {name!r}")
    return found


def rename_tag(store: Store, old: str, new: str) -> str:
    """Rename a tag and every annotation that uses it, in one transaction. Refused (ValueError)
    when another tag already has the new name. Returns the new name."""
    new = tag_name(new, "new name")
    with store.transaction() as db:
        found = _tag_or_fail(store, old)
        clash = tag(store, new)
        if clash is not None and clash["id"] != found["id"]:
            raise ValueError(f"new name: the codebook already has {clash['name']!r}; pick another name")
        db.execute("UPDATE tags SET name = ? WHERE id = ?", [new, found["id"]])
        db.execute("UPDATE annotations SET tag = ? WHERE tag = ?", [new, found["name"]])
    return new


def set_tag_colour(store: Store, name: str, colour: str) -> None:
    _check_colour(colour)
    with store.transaction() as db:
        db.execute("UPDATE tags SET colour = ? WHERE id = ?", [colour, _tag_or_fail(store, name)["id"]])


def delete_tag(store: Store, name: str) -> None:
    """Remove an unused tag from the codebook; a tag still on annotations is refused (ValueError)."""
    with store.transaction() as db:
        found = _tag_or_fail(store, name)
        used = db.execute("SELECT COUNT(*) FROM annotations WHERE tag = ?", [found["name"]]).fetchone()[0]
        if used:
            raise ValueError(f"tag: {found['name']!r} is on {used} annotation{'s' if used != 1 else ''}; "
                             f"delete {'those' if used != 1 else 'it'} or rename the tag instead")
        db.execute("DELETE FROM tags WHERE id = ?", [found["id"]])

