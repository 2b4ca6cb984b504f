"""No page ends its run with `st.stop()`, except the refusal of a page a visitor may not open.

`st.stop()` puts the session's script runner in its stopped state (streamlit's
`ScriptRequests.request_stop`), which throws away a rerun queued while the run drew: a steering click
made during a full redraw of a streaming debate was accepted by the server and never ran (found by
bench/class_phones.py: 4 of 4 clicks lost in a 3-phone run with app.py's `st.stop()`, 0 without it).
The check reads the source (AST) of app.py, pages/ and madlab_ui/; its positive control plants a stop.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ALLOWED = {("madlab_ui/access.py", "refuse")}  # a refused visitor's one line: nothing else is on the page


def stops(source: str) -> list[tuple[str | None, int]]:
    """(enclosing function or None, line) of every `st.stop()` call in `source`."""
    found: list[tuple[str | None, int]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.func.attr == "stop"
                    and isinstance(child.func.value, ast.Name) and child.func.value.id == "st"):
                found.append((function, child.lineno))
            visit(child, name)

    visit(ast.parse(source), None)
    return found


def test_no_page_ends_its_run_with_st_stop():
    files = [REPO / "app.py", *sorted((REPO / "pages").glob("*.py")), *sorted((REPO / "madlab_ui").glob("*.py"))]
    found = [(str(path.relative_to(REPO)), function, line) for path in files
             for function, line in stops(path.read_text(encoding="utf-8"))]
    assert [(path, function) for path, function, _ in found] == sorted(ALLOWED), found


def test_the_reader_finds_a_stop_at_the_top_and_inside_a_function():
    planted = "import streamlit as st\nif x:\n    st.stop()\ndef page():\n    st.stop()\n"
    assert stops(planted) == [(None, 3), ("page", 5)]
