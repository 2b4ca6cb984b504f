"""One row into one of the store's own tables, with a statement built once per table and set of columns.

Why not `db[table].insert(row)` each time: sqlite-utils looks the table up in sqlite_master (twice),
checks it exists and builds its INSERT anew for every row, which was most of a recorded turn's
cost (bench/throughput.py: a debate turn is one TurnFinished plus an updated_at, written while
every other debate of the file waits for the write lock). The tables written here are the
store's own, made by its migrations, so their columns are read once per connection; the values
are converted the way sqlite-utils converts them (`jsonify_if_needed`: lists and dicts as JSON
text), and the key returned is the one sqlite-utils returns without a `pk` argument (the rowid).

A row naming a column the cached list lacks re-reads the table once (a migration of this
process may have added it); if the column is still missing, or the table does not exist,
sqlite-utils' own `insert` takes the row, so its error (or its creating the table) is unchanged.
"""
from __future__ import annotations

from typing import Any

from sqlite_utils import Database
from sqlite_utils.db import jsonify_if_needed


class RowInserter:
    """Inserts rows through one connection, with its tables' columns and statements cached."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._columns: dict[str, frozenset[str]] = {}
        self._statements: dict[tuple[str, tuple[str, ...], bool], str] = {}

    def insert(self, table: str, row: dict[str, Any], *, replace: bool = False) -> int | None:
        """Insert `row` (already encoded: see rows.encode) and return its rowid."""
        keys = tuple(row)
        statement = self._statements.get((table, keys, replace))
        if statement is None:
            if not self._has_columns(table, keys):
                return self.db[table].insert(row, replace=replace).last_pk
            statement = (f"INSERT {'OR REPLACE ' if replace else ''}INTO [{table}] "
                         f"({', '.join(f'[{key}]' for key in keys)}) VALUES ({', '.join('?' * len(keys))})")
            self._statements[(table, keys, replace)] = statement
        return self.db.conn.execute(statement, [jsonify_if_needed(value) for value in row.values()]).lastrowid

    def _has_columns(self, table: str, keys: tuple[str, ...]) -> bool:
        """Whether `table` exists with every column of `keys` (read again when the cached list lacks one)."""
        columns = self._columns.get(table)
        if columns is None or not set(keys) <= columns:
            columns = self._columns[table] = frozenset(column.name for column in self.db[table].columns)
        return bool(columns) and set(keys) <= columns
