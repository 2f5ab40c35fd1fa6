"""The fake models ``kitab model serve --fake`` answers with (docs/models.md): what a model
would say to each prompt of the warehouse's releases, by behaviour.

- ``perfect``: a query prompt gets its key (the export's ``mapped_books``) as a KITAB list
  (``Output:\\n1. Reason: ... Title: ...``; "No books found." for an unsatisfiable query), a
  claim prompt its label: all correct 1.000 and pair accuracy 1.000.
- ``one-title``: a query prompt gets one title, the author's first book (earliest year), a
  claim prompt "True": between the two.
- ``refusal``: "I cannot help with that." to everything: every query an abstention.

A prompt is known by its text: every task's prompts (kitab/release/task.py), every template,
of every committed release, rendered as ``kitab answer`` renders them. A prompt not known
re-reads the releases once (a scheduled cycle publishes a new release while the endpoint
runs), and one still unknown gets "I don't know." This lives in kitab.release, not beside the
loopback endpoint in kitab.simulate, because it renders prompts and reads keys, which
kitab.release owns (tests/test_layers.py: kitab.simulate imports core and sources only);
kitab/app/commands/model.py puts the two together.
"""

from __future__ import annotations

import ast
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kitab.core.errors import BadValue
from kitab.core.warehouse import Warehouse

BEHAVIOURS = ("perfect", "one-title", "refusal")
REFUSAL = "I cannot help with that."
UNKNOWN = "I don't know."
NO_BOOKS = "No books found."
_YEAR = re.compile(r"^(?P<title>.*) \((?P<year>-?\d+)\)$")


def model_id(behaviour: str) -> str:
    """The model id the endpoint serves for ``behaviour`` (what ``kitab answer --model`` sends,
    and so what the response cache and the leaderboard name)."""
    return f"fake-{behaviour}"


def check_behaviour(behaviour: str) -> str:
    if behaviour not in BEHAVIOURS:
        raise BadValue(f"--behaviour {behaviour!r}: use one of {', '.join(BEHAVIOURS)}")
    return behaviour


def list_answer(titles: list[str]) -> str:
    """KITAB's output format (Template 2a) listing ``titles``; the no-books statement for none."""
    if not titles:
        return f"Output:\n{NO_BOOKS}\n"
    lines = "".join(f"{n}. Reason: It satisfies the criteria. Title: {t}\n" for n, t in enumerate(titles, 1))
    return f"Output:\n{lines}"


def first_book(all_books: list[str]) -> str | None:
    """The earliest of ``all_books`` ("Title (YYYY)" entries; ties and undated: by title)."""

    def key(entry: str) -> tuple:
        m = _YEAR.match(entry)
        return (int(m["year"]), m["title"]) if m else (10**6, entry)

    if not all_books:
        return None
    entry = min(all_books, key=key)
    m = _YEAR.match(entry)
    return m["title"] if m else entry


@dataclass(frozen=True)
class Known:
    """One known prompt: the task it belongs to and what each behaviour answers to it."""

    task: str
    release: str
    query_id: str
    perfect: str
    one_title: str


def _query_truths(con) -> dict[str, tuple[str, str]]:
    rows = con.execute("SELECT query_id, mapped_books, all_books FROM kitab_book_constraints").fetchall()
    out = {}
    for query_id, mapped, all_books in rows:
        first = first_book(ast.literal_eval(all_books))
        out[query_id] = (list_answer(ast.literal_eval(mapped)), list_answer([first] if first else []))
    return out


def _claim_truths(con) -> dict[str, tuple[str, str]]:
    rows = con.execute("SELECT query_id, label FROM claims").fetchall()
    return {query_id: (str(bool(label)), "True") for query_id, label in rows}


# each task's answers per item (perfect, one-title); a task not here is answered UNKNOWN
TRUTHS: dict[str, Callable] = {"queries": _query_truths, "claims": _claim_truths}


def release_known(warehouse: Path, release: str) -> dict[str, Known]:
    """Every prompt of ``release`` (every task with a truth reader, every template) -> Known."""
    from kitab.release.task import tasks

    known: dict[str, Known] = {}
    with Warehouse(Path(warehouse)).connect(release=release) as con:
        truths = {name: read(con) for name, read in TRUTHS.items()}
    for t in tasks():
        if t.name not in truths:
            continue
        for template in t.templates:
            for line in t.prompts(warehouse, release, template):
                row = json.loads(line)
                perfect, one_title = truths[t.name][row["query_id"]]
                known[row["prompt"]] = Known(t.name, release, row["query_id"], perfect, one_title)
    return known


class FakeModel:
    """``answer(prompt)`` for one behaviour over a warehouse's releases (thread-safe: the
    endpoint answers requests on threads). ``reads``: how many times the releases were read."""

    def __init__(self, warehouse: Path, behaviour: str):
        self.warehouse, self.behaviour = Path(warehouse), check_behaviour(behaviour)
        self.known: dict[str, Known] = {}
        self.versions: dict[str, tuple] = {}  # release -> its committed files (a rebuild changes them)
        self.reads = 0
        self._lock = threading.Lock()

    def refresh(self) -> list[str]:
        """Index the releases committed since the last read (or rebuilt): the ones it read."""
        with self._lock:
            wh = Warehouse(self.warehouse)
            self.reads += 1
            read = []
            for release in wh.committed_releases():
                version = tuple(sorted(str(p) for p in wh.committed_files(release).values()))
                if self.versions.get(release) == version:
                    continue
                stale = [p for p, k in self.known.items() if k.release == release]
                for prompt in stale:
                    del self.known[prompt]
                self.known.update(release_known(self.warehouse, release))
                self.versions[release] = version
                read.append(release)
            return read

    def answer(self, prompt: str) -> str:
        if self.behaviour == "refusal":
            return REFUSAL
        known = self.known.get(prompt)
        if known is None:  # a release published since? read the releases once, then look again
            self.refresh()  # (another request's read may have found it: look again whatever this one read)
            known = self.known.get(prompt)
        if known is None:
            return UNKNOWN
        return known.perfect if self.behaviour == "perfect" else known.one_title
