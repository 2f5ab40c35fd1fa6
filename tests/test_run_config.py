"""The run configuration drives every step (issue 36): each value the ledger records as the
run's configuration is the value the steps used. A release is built through the real
pipeline (the bundled dump, a few authors, in this process) with one field changed at a time;
the ledger's config says the new value and the release (or, for a field that only decides how
the data is asked for, the requests) changes with it."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from flows.configure import flow_config, resolve_config
from kitab.core.config import Settings
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.errors import BadValue
from kitab.core.params import IDENTITY, RunConfig
from kitab.core.warehouse import Warehouse
from tasks.sample_queries import SamplingRates

AUTHORS, SEED = 3, 11
# every query the paper samples at a rate below 1, kept
ALL_KEPT = dataclasses.replace(
    SamplingRates(),
    one_constraint={"starts_with": 1.0, "ends_with": 1.0, "word_count": 1.0},
    two_easy=1.0,
    two_one_book=1.0,
    two_more_books=1.0,
)


def _config(root, *, settings: dict | None = None, rates: SamplingRates | None = None) -> RunConfig:
    config = resolve_config(
        {
            "source": "dump",
            "snapshot": str(BUNDLED_SNAPSHOT),
            "authors": AUTHORS,
            "seed": SEED,
            "release": "r",
            "warehouse": str(root),
            "replace": True,  # every build replaces the last: no release excludes another's authors
            "allow_fewer": True,
        },
        settings=Settings.from_values({"warehouse": str(root), **(settings or {})}),
        workers=1,  # the steps in this process: the models load once for every build
    )
    if rates is not None:
        config = dataclasses.replace(config, sampling_rates=json.dumps(rates.as_dict(), sort_keys=True))
    return config


def _build(config: RunConfig) -> tuple[dict, dict]:
    """The run summary and the config the ledger recorded for it."""
    from flows.pipeline import run_pipeline, running
    from flows.runners import LocalRunner

    runner = LocalRunner(workers=1)
    try:
        with running(config) as progress:
            summary = run_pipeline(config, runner, progress=progress)
    finally:
        runner.close()
    recorded = json.loads(Warehouse(config.settings.warehouse).ledger_row("r")["config"])
    return summary, recorded


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return tmp_path_factory.mktemp("run_config")


@pytest.fixture(scope="module")
def reference(warehouse) -> dict:
    summary, _ = _build(_config(warehouse))
    return summary


def _changed(a: dict, b: dict) -> set[str]:
    return {t for t in json.loads(a["checksums"]) if json.loads(a["checksums"])[t] != json.loads(b["checksums"])[t]}


@pytest.mark.parametrize(
    ("field", "value", "tables"),
    [
        ("birth_year_min", 1930, {"authors", "books"}),  # other authors are eligible
        ("min_works", 30, {"authors", "books"}),
        ("max_works", 40, {"authors", "books"}),
        ("ol_page_size", 7, {"works_raw"}),  # each work's request (its page) is recorded
    ],
)
def test_each_setting_the_ledger_records_is_the_one_the_steps_used(warehouse, reference, field, value, tables):
    summary, recorded = _build(_config(warehouse, settings={field: value}))
    assert recorded[field] == value == recorded["settings"][field]
    assert tables <= _changed(reference, summary)


def test_the_sampling_rates_the_ledger_records_are_the_ones_the_queries_were_drawn_with(warehouse, reference):
    summary, recorded = _build(_config(warehouse, rates=ALL_KEPT))
    assert SamplingRates.from_dict(recorded["sampling_rates"]) == ALL_KEPT
    assert recorded["sampling_rates"]["one_constraint"]["starts_with"] == 1.0
    # every satisfiable query candidate kept: more queries (and more entity pairs drawn that the
    # key-error bound leaves out, each a rejects row), and the validity battery scored on those
    # queries (baselines); the rest of the release as it was
    assert _changed(reference, summary) == {"queries", "rejects", "baselines"}
    assert summary["stage_counts"]["queries"] > reference["stage_counts"]["queries"]


def test_the_birth_year_window_decides_the_requests_not_the_release(warehouse, reference):
    """The window only cuts the candidate query into pieces (an author lands in one window
    however they are cut): applied (more queries), not part of what decides the release."""
    summary, recorded = _build(_config(warehouse, settings={"birth_year_window": 5}))
    assert recorded["birth_year_window"] == 5
    fingerprints = len(summary["stage_stats"]["sample_authors"]["sparql_fingerprints"])
    assert fingerprints > len(reference["stage_stats"]["sample_authors"]["sparql_fingerprints"])
    assert _changed(reference, summary) == set()
    assert "birth_year_window" not in IDENTITY


def test_the_language_rule_is_recorded_as_the_code_that_ran_not_as_a_choice(warehouse, reference):
    from tasks.clean_books import LANG_DETECTOR

    recorded = json.loads(Warehouse(warehouse).ledger_row("r")["config"])
    assert recorded["language_rule"] == LANG_DETECTOR
    assert "language_rule" not in {f.name for f in dataclasses.fields(RunConfig)}


def test_a_step_in_another_process_gets_the_settings_of_the_config_not_its_environment(monkeypatch, tmp_path):
    from kitab.sources import SourceSpec

    monkeypatch.setenv("KITAB_OL_PAGE_SIZE", "100")
    settings = Settings.from_values({"warehouse": str(tmp_path), "ol_page_size": 7})
    spec = SourceSpec.of("dump", settings, snapshot=BUNDLED_SNAPSHOT, mirror_url=None, cache_scope=None)
    sources = spec.open()
    try:
        assert sources.openlibrary.page_size == 7
    finally:
        sources.close()


def test_a_flow_run_gets_its_config_or_its_parameters_never_both(tmp_path):
    config = _config(tmp_path)
    assert flow_config({"config": config.to_dict()}) == config
    with pytest.raises(BadValue, match="not both .*authors"):
        flow_config({"config": config.to_dict(), "authors": 7})
    bare = flow_config({"authors": 7, "seed": 3, "source": "dump"})
    assert (bare.params.authors, bare.params.seed, bare.params.release.endswith("-s3")) == (7, 3, True)


def test_the_entity_types_asked_for_every_author_are_the_tagged_kinds(tmp_path):
    """always_asked follows the run's taggers: a default run records human and city only (a kind
    registered but not selected, country, must not change every release's recorded rates, which
    a rebuild compares), a run that tags country asks country_name for every author too."""
    settings = Settings(warehouse=tmp_path)

    def asked(taggers: str | None) -> list[str]:
        config = resolve_config({"source": "dump", "seed": 1, "release": "r"}, settings=settings, taggers=taggers)
        return json.loads(config.sampling_rates)["always_asked"]

    assert asked(None) == ["city_name", "human_name"]
    assert asked("human_v6,city_v6,country_v1") == ["city_name", "country_name", "human_name"]
    assert asked("human_v6") == ["human_name"]


def test_the_default_batch_size_follows_the_runs_size_and_the_ledger_records_the_one_used():
    from datetime import date

    from kitab.core.params import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, RefreshParams, batch_size_for

    today = date(2026, 11, 28)
    sizes = {n: RefreshParams(authors=n).resolved(today).batch_size for n in (1, 10_000, 25_000, 50_000, 10**5, 10**6)}
    assert sizes == {1: 250, 10_000: 250, 25_000: 250, 50_000: 500, 10**5: MAX_BATCH_SIZE, 10**6: MAX_BATCH_SIZE}
    assert all(DEFAULT_BATCH_SIZE <= batch_size_for(n) <= MAX_BATCH_SIZE for n in range(1, 300_000, 997))
    # one given is kept, at any size; the recorded config says the resolved number
    assert RefreshParams(authors=10**5, batch_size=7).resolved(today).batch_size == 7
    config = resolve_config(dict(source="dump", authors=60_000, batch_size=None), today=today)
    assert config.params.batch_size == 600 and config.to_dict()["batch_size"] == 600
    with pytest.raises(BadValue, match="batch size"):
        RefreshParams(batch_size=0)


def test_a_small_run_keeps_its_cpu_steps_in_its_process_unless_workers_are_named():
    """Below IN_PROCESS_BELOW authors the worker processes' start-up (every stage) costs more
    than they give; a run that names its workers, or runs on Dask, gets what it asked for."""
    from flows.configure import IN_PROCESS_BELOW

    cores = os.cpu_count() or 1

    def workers(authors: int, **kwargs) -> int:
        return resolve_config(dict(source="dump", authors=authors, seed=1, release="r"), **kwargs).workers

    assert workers(40) == workers(IN_PROCESS_BELOW - 1) == 1
    assert workers(IN_PROCESS_BELOW) == workers(100_000) == cores
    assert workers(40, workers=2) == 2 and workers(100_000, workers=1) == 1
    assert workers(40, runner="prefect-dask") == workers(40, runner="prefect-dask@tcp://h:8786") == cores
    assert workers(40, runner="prefect-threads") == 1
