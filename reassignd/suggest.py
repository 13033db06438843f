"""How every reader of named keys (the config file, runtime limits over the API, MQTT and the CLI, limits
files of `reassignd schedule`) says a key is unknown: the likely one suggested, else where they are listed.

Pure; difflib's ratio finds a key with one letter dropped, doubled or swapped in a long dotted name.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6


def unknown_key(name: str, known: Iterable[str], *, listed_by: str | None = None) -> str:
    """`unknown key; did you mean K?` for the closest known key, else `unknown key; ` and `listed_by` (e.g.
    "`reassignd limits` lists them"), or the known keys themselves."""
    keys = sorted(set(known))
    close = difflib.get_close_matches(name, keys, n=1, cutoff=CUTOFF)
    if close:
        return f"unknown key; did you mean {close[0]}?"
    return "unknown key; " + (listed_by or f"known: {', '.join(keys)}")
