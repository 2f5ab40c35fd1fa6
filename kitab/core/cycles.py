"""Python's cycle collector paused around a step's pure compute (kitab/core/workdir.py
WorkDir.run: every pipeline step).

A step that builds a batch's rows as dicts and tuples allocates millions of small objects, none
in a reference cycle; CPython's collector still walks every live one each time the young
generations overflow and the old one grows by a quarter, which cost the constrain step about a
quarter of its CPU and the claims draw 40% (docs/scale.md, Round 3). Reference counting frees
everything the compute drops; what cycles it leaves (one batch's) are collected after, once the
collector runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (restored after, even on an error)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
