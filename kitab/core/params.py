"""A refresh's parameters, declared once: the CLI's options, the ``refresh`` flow's
signature (flows/refresh.py derives it from these fields), ``kitab.app.runs.run_refresh``,
prefect.yaml's deployment and the stack all read :class:`RefreshParams`."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from kitab.core.config import Settings
from kitab.core.env import BUNDLED_SNAPSHOT
from kitab.core.errors import BadValue

SOURCES = ("live", "mirror", "dump")
DEFAULT_BATCH_SIZE = 250  # authors per batch: tens of task runs for 10,000 authors
# ... and for a large run, a hundredth of it, up to this: each batch costs ~0.2 CPU-s of fixed
# work and task runs, and a batch of 1,000 authors ~0.13 GiB more in each constrain worker
# (docs/scale.md), which a 100,000-author run, whose peak is publishing's, can spend
MAX_BATCH_SIZE = 1000
DEFAULT_MAX_FAILED_SHARE = 0.10  # of the sampled authors, lost to an unavailable source
# an entity query whose key's estimated chance of holding a wrong book is above this is not asked
# (issue 37; tasks/sample_queries.SamplingRates.max_key_error)
DEFAULT_MAX_KEY_ERROR = 0.10


def batch_size_for(authors: int) -> int:
    """The default batch size of a run of ``authors``: DEFAULT_BATCH_SIZE (250) up to 25,000
    authors, then a hundredth of the run, up to MAX_BATCH_SIZE (1,000 from 100,000 on). The
    release does not depend on it (tests/test_pipeline.py)."""
    return min(MAX_BATCH_SIZE, max(DEFAULT_BATCH_SIZE, authors // 100))


def default_seed(today: date) -> int:
    return int(f"{today:%Y%m%d}")


def default_release_id(seed: int, today: date) -> str:
    """Release ids are <UTC date>-s<seed>, e.g. 2026.11.21-s42: the version scheme of the
    warehouse and of the Hugging Face dataset (its tag). See README, Releases."""
    return f"{today:%Y.%m.%d}-s{seed}"


@dataclass(frozen=True)
class RefreshParams:
    """One refresh, as the CLI, the flow and the deployment give it. Field comments are the
    options' meaning; the flow's parameters are these fields with these defaults."""

    source: str = "mirror"
    snapshot: str | None = None
    authors: int = 40
    seed: int | None = None
    release: str | None = None
    warehouse: str | None = None
    mirror_url: str | None = None
    # Authors per batch; None: by the run's size (batch_size_for), resolved once.
    batch_size: int | None = None
    # More authors asked for than are eligible: publish the fewer (the summary says how many
    # short) instead of failing.
    allow_fewer: bool = False
    # Authors lost to a source that did not answer (rejected as source_unavailable) may be at
    # most this share of the sampled authors; above it the refresh fails and publishes nothing.
    max_failed_share: float = DEFAULT_MAX_FAILED_SHARE
    # The tagger versions (comma-separated, one per kind); None: the app layer's choice
    # ($KITAB_TAGGERS, else the registry's default), resolved once into the RunConfig.
    taggers: str | None = None
    # The second reader of each book's title (docs/tagging.md, "States and evidence"): "model"
    # (the model endpoint, RunConfig.tagger_endpoint) or "" (none); None: the app layer's choice
    # ($KITAB_SECOND_READER, else none), resolved once into the RunConfig.
    second_reader: str | None = None
    # A committed release is a fixed thing: a rebuild whose parameters or tables differ from it
    # is refused unless this is set (the replaced version stays in the ledger's history).
    replace: bool = False
    # Authors rejected by an earlier release (too few books, no Open Library match) are not
    # drawn again unless this is set.
    redraw_rejected: bool = False
    # An entity query (human / city name, ...) whose key's estimated chance of holding a wrong
    # book is above this is not asked (its drop is a rejects row); 1 asks them all.
    max_key_error: float = DEFAULT_MAX_KEY_ERROR

    def __post_init__(self) -> None:
        """Every value checked here, before a flow starts (a BadValue is one line for the user)."""
        if self.source not in SOURCES:
            raise BadValue(f"source {self.source!r}: expected one of {', '.join(SOURCES)}")
        if not 0.0 <= self.max_failed_share <= 1.0:
            raise BadValue(f"max failed share must be between 0 and 1, got {self.max_failed_share}")
        if not 0.0 <= self.max_key_error <= 1.0:
            raise BadValue(f"max key error must be between 0 and 1, got {self.max_key_error}")
        if self.batch_size is not None and self.batch_size < 1:
            raise BadValue(f"batch size must be >= 1, got {self.batch_size}")
        if self.authors < 1:
            raise BadValue(f"authors must be >= 1, got {self.authors}")
        if self.seed is not None and not 0 <= self.seed < 2**63:  # the ledger's seed is an int64
            raise BadValue(f"seed must be between 0 and {2**63 - 1}, got {self.seed}")
        if self.release is not None:  # "" too: an empty id is an error, not the default
            from kitab.core.ledger import validate_release_id  # (duckdb: not at the CLI's start)

            try:
                validate_release_id(self.release)
            except ValueError as exc:
                raise BadValue(str(exc)) from None

    def resolved(self, today: date) -> RefreshParams:
        """These parameters with the defaults of ``today`` filled in: the seed is the date
        (YYYYMMDD), the release id ``YYYY.MM.DD-s<seed>``; and the batch size by the run's size."""
        seed = default_seed(today) if self.seed is None else self.seed
        release = default_release_id(seed, today) if self.release is None else self.release
        batch_size = batch_size_for(self.authors) if self.batch_size is None else self.batch_size
        return dataclasses.replace(self, seed=seed, release=release, batch_size=batch_size)

    def snapshot_dir(self) -> Path:
        return Path(self.snapshot) if self.snapshot else BUNDLED_SNAPSHOT


DEFAULTS = RefreshParams()

# The works rule, as WDQS applies it since the graph split (2025-05-09): query.wikidata.org serves
# the main graph, without the scholarly articles, which moved to query-scholarly.wikidata.org. An
# item is in the scholarly graph when its P31 is one of these classes (scholarly article and the
# publication kinds listed with it) or it has a P13046 (publication type of scholarly work). Every
# source (live and mirror SPARQL, dump store, from-dumps builder, generator) counts and lists only
# the main graph's works (kitab.sources.queries); the rule is in every release's config.
SCHOLARLY_CLASSES = (
    "Q13442814",  # scholarly article
    "Q18918145",  # academic journal article
    "Q580922",  # preprint
    "Q7318358",  # review article
    "Q1348305",  # erratum
    "Q45182324",  # retraction notice
    "Q23927052",  # conference paper
)
SCHOLARLY_PROPERTY = "P13046"  # publication type of scholarly work
WORKS_RULE = (
    "main graph (WDQS since 2025-05-09): P50 works without P31 in "
    + "/".join(SCHOLARLY_CLASSES)
    + f" and without {SCHOLARLY_PROPERTY}"
)

# What decides a release's content: a rebuild that differs in one of these from the committed
# release is refused (unless --replace). Not in it: where it runs (runner, workers, batch size,
# mirror URL, warehouse), what only decides whether it fails (allow_fewer, max_failed_share) and
# how the candidates are asked for (birth_year_window cuts the candidate query into windows; an
# author lands in one window however it is cut: tests/test_run_config.py).
IDENTITY = (
    "source",
    "snapshot_id",
    "seed",
    "authors",
    "taggers",
    "second_reader",
    "tagger_llm",  # the model the endpoint names, when a model reads titles (else None)
    "redraw_rejected",
    "sampling_rates",
    "language_rule",
    "works_rule",
    "birth_year_min",
    "min_works",
    "max_works",
    "ol_page_size",  # works_raw records each work's page request
)
# Keys added to IDENTITY after releases were first recorded, with the value such a release had.
IDENTITY_ADDED = {"second_reader": "", "tagger_llm": None}


def identity_of(values: dict, snapshot_id: str | None) -> dict:
    """IDENTITY's values from a config as :meth:`RunConfig.to_dict` gives it (this run's, or a
    ledger row's recorded one), ``snapshot_id`` the snapshot's id as the source read it."""
    derived = {"snapshot_id": snapshot_id, "tagger_llm": (values.get("tagger_endpoint") or {}).get("model")}
    return {k: derived[k] if k in derived else values.get(k, IDENTITY_ADDED.get(k)) for k in IDENTITY}


@dataclass(frozen=True)
class ModelEndpoint:
    """The OpenAI-compatible chat endpoint the model taggers and the model second reader ask
    (tasks/taggers/model.py). Not its API key: a secret, never recorded nor carried, read from
    ``OPENAI_API_KEY`` where the request is sent (kitab/sources/chat.py)."""

    base_url: str = ""  # e.g. http://127.0.0.1:8000/v1
    model: str = ""
    cache: str | None = None  # the response cache file (None: kitab/sources/chat.py's default)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def runner_kind(runner: str) -> str:
    """local | threads | dask, from a RunConfig's runner (local, prefect-threads,
    prefect-dask[@address])."""
    return runner.removeprefix("prefect-").split("@", 1)[0]


@dataclass(frozen=True)
class RunConfig:
    """One refresh's whole configuration, resolved once in the app layer (kitab.app.runs) and
    passed to every step as an argument: nothing below kitab/app reads the environment. The
    ledger row keeps it whole (``releases.config``; ``kitab releases --show ID``)."""

    params: RefreshParams  # resolved: seed and release set
    settings: Settings  # the run's settings (kitab.core.config), built from the environment once
    taggers: tuple[str, ...]  # tagger version ids, one per kind (tasks/taggers/registry.py)
    # JSON of tasks.sample_queries.SamplingRates: what the constrain and query steps sample with
    sampling_rates: str
    runner: str = "local"  # local | prefect-threads | prefect-dask[@address]
    workers: int = 1  # processes for CPU steps on this machine
    # the model endpoint, recorded when a step asks a model (model taggers selected, or the
    # model as second reader), else None
    tagger_endpoint: ModelEndpoint | None = None
    second_reader: str = ""  # "" (none) | "model"

    def __post_init__(self) -> None:
        if self.params.seed is None or self.params.release is None:
            raise ValueError("RunConfig needs resolved params (seed and release set)")

    def to_dict(self) -> dict:
        """JSON-ready, flat: what the run was asked to do. The ledger row keeps it with the
        facts of the code it ran (flows.configure.recorded_config: the language rule), and
        ``kitab releases --show`` prints it."""
        import json

        p = self.params
        s = self.settings
        return {
            "release": p.release,
            "source": p.source,
            "snapshot": p.snapshot,
            "seed": p.seed,
            "authors": p.authors,
            "batch_size": p.batch_size,
            "allow_fewer": p.allow_fewer,
            "max_failed_share": p.max_failed_share,
            "redraw_rejected": p.redraw_rejected,
            "taggers": list(self.taggers),
            "second_reader": self.second_reader,
            "tagger_endpoint": self.tagger_endpoint.to_dict() if self.tagger_endpoint else None,
            "sampling_rates": json.loads(self.sampling_rates),
            "works_rule": WORKS_RULE,
            "runner": self.runner,
            "workers": self.workers,
            "birth_year_min": s.birth_year_min,
            "birth_year_window": s.birth_year_window,
            "min_works": s.min_works,
            "max_works": s.max_works,
            "ol_page_size": s.ol_page_size,
            "settings": s.model_dump(mode="json"),
            "params": dataclasses.asdict(p),
        }

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        """What :meth:`to_dict` gave (a Prefect flow's parameter), as the RunConfig again."""
        import json

        return cls(
            params=RefreshParams(**d["params"]),
            settings=Settings.from_values(d["settings"]),
            taggers=tuple(d["taggers"]),
            sampling_rates=json.dumps(d["sampling_rates"], sort_keys=True),
            runner=d["runner"],
            workers=d["workers"],
            tagger_endpoint=ModelEndpoint(**d["tagger_endpoint"]) if d.get("tagger_endpoint") else None,
            second_reader=d.get("second_reader", ""),
        )


def flow_signature() -> inspect.Signature:
    """RefreshParams' fields as keyword parameters with their defaults and types: the
    ``refresh`` flow's signature (Prefect builds the deployment's parameter schema from it),
    and ``config``."""
    hints = {"str": str, "str | None": str | None, "int": int, "int | None": int | None, "bool": bool, "float": float}
    return inspect.Signature(
        [
            *(
                inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.type])
                for f in dataclasses.fields(RefreshParams)
            ),
            # the run's whole configuration (RunConfig.to_dict), as the app layer resolved it
            inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=dict | None),
        ],
        return_annotation=dict,
    )
