"""Evaluation tasks: each one object, registered by name, that the commands ask (issue 36).

A task is what a model is evaluated on (compare inspect-ai's ``Task(dataset, solver, scorer,
metrics)`` and lm-evaluation-harness's task registry): how its prompts are made, how a model's
answer is read, how it is scored and where the scores go (its result table, an annex table of
kitab/core/ledger.py), and its part of the report. ``kitab prompts``, ``kitab answer`` (and its
``--evaluate``), ``kitab evaluate`` and ``kitab report`` ask :func:`task` for the one named by
``--task``; none of them branches on a task's name. Not to be confused with ``tasks/`` (the
pipeline's stage functions) or Prefect tasks.

- ``queries``: KITAB's list queries (kitab/release/prompts.py, evaluation/, leaderboard.py).
- ``claims``: the claim pairs (kitab/release/claims.py, docs/claims.md).

A new task is one subclass here, ``@register``-ed, whose methods import its module (lazily:
the command line starts without pyarrow or the scorers), plus its result table's schema.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from kitab.core.errors import BadValue


class Task(ABC):
    """One evaluation task (a stateless singleton in the registry)."""

    name: ClassVar[str]  # the --task value
    about: ClassVar[str]  # what it is, for --task's help
    templates: ClassVar[tuple[str, ...]]  # its prompt templates, the first the default
    max_tokens: ClassVar[Mapping[str, int]]  # the answer length asked per template (kitab answer)
    table: ClassVar[str]  # its result table (one row per scored item and sample)

    def template(self, name: str | None) -> str:
        """``--template``: its default when not given; one of its own templates, or a clear error."""
        if name is None:
            return self.templates[0]
        if name not in self.templates:
            raise BadValue(f"unknown template {name!r} (--task {self.name} has: {', '.join(self.templates)})")
        return name

    @abstractmethod
    def prompts(
        self, warehouse: Path, release: str, template: str, *, limit: int | None = None, seed: int = 0
    ) -> Iterator[str]:
        """JSON lines ``{query_id, template, prompt}`` of the release (``limit``: a seeded sample)."""

    @abstractmethod
    def read(self, response: str | None) -> Any:
        """A model's text -> what is scored (the titles it lists; its True/False verdict)."""

    @abstractmethod
    def evaluate(
        self,
        warehouse: Path,
        release: str,
        answers: Path,
        *,
        model: str | None = None,
        response_column: str | None = None,
        over: str | None = None,
    ) -> dict:
        """Score an answers file, store its rows in :attr:`table`, return the result (JSON-able).
        ``over``: the population scored (evaluation/population.py; None: the file's --limit
        sample if it names one, else the whole release)."""

    @abstractmethod
    def format_result(self, result: dict) -> str:
        """:meth:`evaluate`'s result as the markdown ``kitab evaluate`` prints."""

    @abstractmethod
    def headline(self, result: dict) -> dict[str, float | None]:
        """:meth:`evaluate`'s result in its headline scores (``kitab cycle``'s line per model)."""

    @abstractmethod
    def report_section(
        self,
        con,
        release: str,
        plots_dir: Path | None = None,
        include_stale: bool = False,
        *,
        seed: int | None = None,
        resamples: int | None = None,
    ) -> str:
        """Its section of ``kitab report`` (markdown; "" when nothing was evaluated)."""

    @abstractmethod
    def report_json(self, con, release: str, *, b: int, seed: int, include_stale: bool = False) -> dict:
        """Its keys of ``kitab report --output json``."""


_TASKS: dict[str, Task] = {}


def register(cls: type[Task]) -> type[Task]:
    """Class decorator: make a task known to the commands (in registration order)."""
    if cls.name in _TASKS:
        raise ValueError(f"task {cls.name!r} registered twice")
    _TASKS[cls.name] = cls()
    return cls


def task_names() -> tuple[str, ...]:
    return tuple(_TASKS)


def task(name: str) -> Task:
    """The task named ``name`` (``--task``), or a clear one-line error naming the known ones."""
    try:
        return _TASKS[name]
    except KeyError:
        raise BadValue(f"--task {name!r}: use one of {', '.join(_TASKS)}") from None


def tasks() -> list[Task]:
    return list(_TASKS.values())


def task_help() -> str:
    """``--task``'s help, from the registry."""
    return " | ".join(f"{t.name} ({t.about})" for t in _TASKS.values())


def template_help() -> str:
    """``--template``'s help, from the registry."""
    return "; ".join(f"--task {t.name}: {' | '.join(t.templates)}" for t in _TASKS.values()) + " (default: its first)"


def report_sections(con, release: str, plots_dir: Path | None = None, include_stale: bool = False, **kw) -> list[str]:
    """Every task's non-empty section of ``kitab report``, in registration order."""
    sections = (t.report_section(con, release, plots_dir, include_stale, **kw) for t in _TASKS.values())
    return [s for s in sections if s]


def report_json(con, release: str, *, b: int, seed: int, include_stale: bool = False) -> dict:
    """``kitab report --output json``: every task's keys in one object, and ``validity``: each
    task's floor and ceiling (kitab/release/validity/floor.py)."""
    from kitab.release.validity.floor import release_validity

    out: dict = {}
    for t in _TASKS.values():
        out.update(t.report_json(con, release, b=b, seed=seed, include_stale=include_stale))
    out["validity"] = release_validity(con)
    return out


@register
class Queries(Task):
    name = "queries"
    about = "KITAB's list queries"
    templates = ("no-context", "with-context", "self-context", "cot")
    # the paper's maximum output lengths per template (App. D)
    max_tokens = {"no-context": 400, "with-context": 1000, "self-context": 3000, "cot": 400}
    table = "evaluations"

    def prompts(self, warehouse, release, template, *, limit=None, seed=0):
        from kitab.release.prompts import release_prompts

        return release_prompts(warehouse, release, template, limit=limit, seed=seed)

    def read(self, response):
        from kitab.release.evaluation.parse import read_answer

        return read_answer(response)

    def evaluate(self, warehouse, release, answers, *, model=None, response_column=None, over=None):
        from kitab.release.evaluation.run import evaluate_release

        return evaluate_release(warehouse, release, answers, model=model, response_column=response_column, over=over)

    def format_result(self, result):
        from kitab.release.leaderboard import format_evaluation

        return format_evaluation(result)

    def headline(self, result):
        [entry] = result["leaderboard"]["evaluations"]
        return {"all_correct": entry["overall"]["all_correct"], "completeness": entry["overall"]["completeness"]}

    def report_section(self, con, release, plots_dir=None, include_stale=False, *, seed=None, resamples=None):
        from kitab.release.leaderboard import evaluation_section

        return evaluation_section(con, release, plots_dir, include_stale, seed=seed, resamples=resamples)

    def report_json(self, con, release, *, b, seed, include_stale=False):
        from kitab.release.leaderboard import leaderboard

        return leaderboard(con, release, b=b, seed=seed, include_stale=include_stale)


@register
class Claims(Task):
    name = "claims"
    about = "the claim pairs, docs/claims.md"
    templates = ("claims",)  # the one claim template (kitab/release/claims.py)
    max_tokens = {"claims": 200}
    table = "claim_evaluations"

    def prompts(self, warehouse, release, template, *, limit=None, seed=0):
        from kitab.release.claims import release_claim_prompts

        return release_claim_prompts(warehouse, release, limit=limit, seed=seed)

    def read(self, response):
        from kitab.release.claims import read_verdict

        return read_verdict(response)

    def evaluate(self, warehouse, release, answers, *, model=None, response_column=None, over=None):
        from kitab.release.claims import evaluate_claims

        if response_column is not None:
            raise BadValue("--response-column: --task claims reads JSON lines {query_id, response} only")
        return evaluate_claims(warehouse, release, answers, model=model, over=over)

    def format_result(self, result):
        from kitab.release.claims import format_claim_result

        return format_claim_result(result)

    def headline(self, result):
        [entry] = result["pair_accuracy"]
        overall = entry["overall"]
        return {
            "pair_accuracy": overall["pair_accuracy"]["value"],
            "claim_accuracy": overall["claim_accuracy"]["value"],
        }

    def report_section(self, con, release, plots_dir=None, include_stale=False, *, seed=None, resamples=None):
        from kitab.release.claims import claim_section

        return claim_section(con, seed=seed, resamples=resamples)

    def report_json(self, con, release, *, b, seed, include_stale=False):
        from kitab.release.claims import claim_entries

        return {"pair_accuracy": claim_entries(con, b=b, seed=seed)}
