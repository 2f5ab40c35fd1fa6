"""Which matrix library spaCy's NER multiplies with, on one thread.

The NER model's matrix products (its own tok2vec: 4 maxout layers of 288 x 288 per token) were
~half of its time under thinc's default, BLIS. numpy's bundled OpenBLAS does the same products
in ~2/3 of the CPU time, but only held to one thread: with its default of one thread per core,
two tagging workers on two cores spend more CPU spinning than they save. `openblas_set_num_threads_local`
(OpenBLAS >= 0.3.27) pins the calling thread alone, so nothing else in the process changes.

Where numpy's OpenBLAS or that call is missing, NER stays on BLIS. Both give the same entities:
the products differ in the last bits (another summation order), and on the 63,697 titles of a
10,000-author release that NER reads, every entity was the same (docs/tagging.md, "Speed").
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path


@cache
def _set_local_threads():
    """numpy's OpenBLAS `openblas_set_num_threads_local`, or None."""
    import numpy

    libs = Path(numpy.__file__).resolve().parent.parent / "numpy.libs"
    for lib in sorted(libs.glob("*openblas*.so*")):
        try:
            fn = ctypes.CDLL(str(lib)).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
        return fn
    return None


def openblas_usable() -> bool:
    """Whether NER can multiply with numpy's OpenBLAS on one thread (else it keeps BLIS)."""
    return _set_local_threads() is not None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's matrix products on the calling thread use one thread inside the block."""
    fn = _set_local_threads()
    if fn is None:
        yield
        return
    before = fn(1)
    try:
        yield
    finally:
        fn(before)
