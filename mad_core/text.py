"""Text as it may be stored and sent: valid Unicode (lone UTF-16 surrogates replaced).

A leaf any floor may import (it imports nothing of the project): the store cleans every row with it,
steering cleans a moderator's message with it, and the engine's calls clean a reply before it is
recorded, without loading the storage layer (sqlite-utils and pandas) to do so.
"""
from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` as valid Unicode: surrogate pairs joined, lone surrogates replaced by U+FFFD."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
