"""A refresh's configuration, built once: :func:`resolve_config` turns the inputs every entry
point has (the CLI's options, the flow's or the deployment's parameters: RefreshParams' fields)
into the resolved :class:`~kitab.core.params.RunConfig`. kitab.app.runs (the CLI, the demo, the
tests) and kitab.app.scheduled (a deployment's run) call it with what they read from the
environment; the ``refresh`` flow (flows/refresh.py) calls it with nothing more when it is run
bare. Every step then gets its values from the config (flows/pipeline.py).

What the ledger keeps (:func:`recorded_config`) is the config and the facts of the code the run
ran that decide its content but are not choices (the language rule): recorded, not configurable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, date, datetime

from kitab.core.config import Settings
from kitab.core.errors import BadValue
from kitab.core.params import DEFAULTS, ModelEndpoint, RefreshParams, RunConfig, runner_kind


def resolve_config(
    inputs: Mapping,
    *,
    today: date | None = None,
    settings: Settings | None = None,
    taggers: str | None = None,
    runner: str = "local",
    workers: int | None = None,
    tagger_endpoint: ModelEndpoint | None = None,
    second_reader: str | None = None,
) -> RunConfig:
    """The run's whole configuration from ``inputs`` (RefreshParams' fields; a None takes the
    default; a resolved RefreshParams' fields keep their seed and release) with the seed and
    release of ``today`` (UTC) filled in. The other arguments are the app layer's choices (read
    from its environment); what is not given takes the defaults, never the environment."""
    from tasks.generate_constraints import tagged_kinds
    from tasks.sample_queries import SamplingRates, entity_constraint_types
    from tasks.taggers.model import endpoint_in_use
    from tasks.taggers.registry import selected_versions

    params = RefreshParams(**{k: v for k, v in inputs.items() if v is not None}).resolved(
        today or datetime.now(UTC).date()
    )
    if settings is None:
        settings = Settings.from_values({"warehouse": params.warehouse} if params.warehouse else {})
    versions = selected_versions(params.taggers or taggers)
    reader = (params.second_reader if params.second_reader is not None else second_reader or "").strip()
    return RunConfig(
        params=params,
        settings=settings,
        taggers=versions,
        # checked here, before the run starts: a second reader that is not "model", or a model
        # asked without an endpoint, is one line (ModelTaggerError)
        tagger_endpoint=endpoint_in_use(versions, reader, tagger_endpoint),
        second_reader=reader,
        # the paper's rates (tasks/sample_queries.py), every tagged kind's entity type asked for
        # every author; the steps sample with what is recorded here
        sampling_rates=json.dumps(
            SamplingRates(
                always_asked=entity_constraint_types(tagged_kinds(versions)), max_key_error=params.max_key_error
            ).as_dict(),
            sort_keys=True,
        ),
        runner=runner,
        workers=max(1, workers or default_workers(params.authors, runner)),
    )


# Below this many authors a refresh's CPU steps run in its own process, one at a time: each
# stage's worker processes cost ~1.2 CPU-s apiece to start (Python, kitab, the stage's lists and
# models), every stage again. Measured on 2 cores (dump source, warm): 8 authors 7.0-7.7 s
# wall / 9 CPU-s in one process against 9.5-12 s / 14-17 with two workers; 40 authors 9.7 s
# against 13.0; 300 authors 31.1 s either way, 45.6 CPU-s against 52.7; 1,000 authors 45.2 s
# against 43.5. docs/scale.md, "Runners".
IN_PROCESS_BELOW = 500


def default_workers(authors: int, runner: str) -> int:
    """Processes for CPU steps when the run names none ($KITAB_WORKERS): one per
    core, or one (this process) for a run of fewer than IN_PROCESS_BELOW authors. A Dask run
    keeps one per core: its workers are the cluster the user asked for."""
    cores = os.cpu_count() or 1
    if runner_kind(runner) == "dask":
        return cores
    return 1 if authors < IN_PROCESS_BELOW else cores


def flow_config(parameters: dict) -> RunConfig:
    """The config of a flow run from its parameters: ``config`` given whole (the app layer
    resolved it: kitab.app.runs), or else RefreshParams' fields (a bare run: the defaults for
    the rest). Never both: a run gets its parameters once."""
    parameters = dict(parameters)
    given = parameters.pop("config", None)
    if given is None:
        return resolve_config(parameters)
    also = sorted(k for k, v in parameters.items() if v != getattr(DEFAULTS, k))
    if also:
        raise BadValue(f"a refresh gets its config or its parameters, not both (also given: {', '.join(also)})")
    return RunConfig.from_dict(given)


def recorded_config(config: RunConfig) -> dict:
    """What the ledger row keeps (``releases.config``) and a rebuild is compared with: the
    config, and the language rule clean_books applies (a fact of the code, not a choice: there is
    one detector and one rule, tasks/clean_books.py)."""
    from tasks.clean_books import LANG_DETECTOR

    return {**config.to_dict(), "language_rule": LANG_DETECTOR}
