"""What a process keeps from one step to the next: its loaded models and lists, not what it
built for one batch (kitab/core/workdir.py WorkDir.run calls :func:`after_step` once a step's
compute is done, in whichever process ran it).

- ``step_cache(maxsize)``: an ``lru_cache`` emptied after every step. For per-title caches
  (a title's words, key, facts): a title is read many times within its batch and rarely in
  another author's batch, so across batches such a cache only held memory (a worker's caches
  filled to their 65,536 entries each and its RSS grew with the batches it had run).
- the C heap's free pages handed back to the system (glibc's ``malloc_trim``): Python objects
  of more than 512 bytes, NumPy's and (in the worker processes, flows/runners.py) Arrow's
  buffers live there, and glibc keeps what a batch freed unless asked.

docs/scale.md (Round 3, the worker processes) has what each costs and gives back.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from functools import lru_cache
from typing import TypeVar

F = TypeVar("F", bound=Callable)
_STEP_CACHES: list = []


def step_cache(maxsize: int) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)``, emptied by :func:`after_step`."""

    def wrap(func: F) -> F:
        cached = lru_cache(maxsize=maxsize)(func)
        _STEP_CACHES.append(cached)
        return cached  # type: ignore[return-value]

    return wrap


def clear_step_caches() -> None:
    for cached in _STEP_CACHES:
        cached.cache_clear()


@lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``; None where the C library has none (macOS, musl)."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


def trim_heap() -> bool:
    """Return the C heap's free pages to the system (a few ms); False where that is not possible."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def after_step() -> None:
    """Once a step is done: its per-step caches emptied, the heap's free pages given back."""
    clear_step_caches()
    trim_heap()
