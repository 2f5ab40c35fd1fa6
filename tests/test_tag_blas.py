"""NER multiplies with numpy's OpenBLAS on one thread (tasks/taggers/blas.py): the same entities
as thinc's default, BLIS, and the thread setting is the caller's again afterwards."""

from __future__ import annotations

import csv
from pathlib import Path

from thinc.api import NumpyOps

from tasks.taggers.blas import _set_local_threads, one_blas_thread, openblas_usable
from tasks.taggers.pipeline import load_pipeline, recase

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"


def _titles() -> list[str]:
    titles = []
    for name in ("entity_titles.tsv", "entity_blind.tsv"):
        with (DATA / name).open(encoding="utf-8", newline="") as f:
            titles += [row["title"] for row in csv.DictReader(f, delimiter="\t")]
    return titles


def _entities(nlp, titles: list[str]) -> list[list[tuple[int, int, str]]]:
    ner = nlp.get_pipe("ner")
    docs = nlp.tokenizer.pipe([recase(t) for t in titles])
    with one_blas_thread():
        return [[(e.start, e.end, e.label_) for e in d.ents] for d in ner.pipe(docs, batch_size=2000)]


def test_ner_on_openblas_finds_what_blis_finds():
    nlp = load_pipeline()
    ner = nlp.get_pipe("ner")
    assert openblas_usable()  # numpy's wheel bundles OpenBLAS: else this test would compare BLIS with itself
    assert {node.ops.use_blis for node in ner.model.walk()} == {False}
    titles = _titles()
    got = _entities(nlp, titles)
    saved = [(node, node.ops) for node in ner.model.walk()]
    try:
        blis = NumpyOps(use_blis=True)
        for node, _ in saved:
            node.ops = blis
        want = _entities(nlp, titles)
    finally:
        for node, ops in saved:
            node.ops = ops
    assert sum(map(len, want)) > 1000  # the labelled titles hold many entities
    assert got == want


def test_one_blas_thread_restores_the_callers_setting():
    set_threads = _set_local_threads()
    before = set_threads(2)
    try:
        with one_blas_thread():
            assert set_threads(1) == 1  # inside: one thread
        assert set_threads(2) == 2  # after: the caller's two again
    finally:
        set_threads(before)
