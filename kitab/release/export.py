"""``kitab export``: one release -> a Hugging Face dataset folder.

Layout of the folder (the card's ``configs`` list exactly the Parquet files)::

    README.md                      dataset card: YAML header (configs, license, ...), columns,
                                   version, provenance, quality section, license, citation
    provenance.json                the release's ledger row, earlier releases, file checksums
    data/<config>/test-00000-of-00001.parquet
    plots/kappa.png, plots/popularity.png

``layout="kitab"`` (``kitab export --layout kitab``) also writes KITAB's own files, JSON lines
under the original names, and the card's configs point at them as KITAB's card does::

    data/KITAB-ONE-BOOK-CONSTRAINTS.json, data/KITAB-TWO-BOOK-CONSTRAINTS.json,
    data/KITAB-author-metadata.json

so code written for KITAB opens them by path. The other configs are written as JSON lines too
(``data/<config>/test-00000-of-00001.jsonl``, beside their Parquet) and the card names those:
``datasets`` reads every config of a card with the first config's format (datasets #7101),
so a card mixing JSON lines and Parquet loads only some of its configs. The first config, ``one-book-constraints``, is
the default (``load_dataset(folder)`` needs no config name), and both query configs carry a
``prompt`` column: the paper's Template 2a (no-context) for the query, what ``kitab answer``
sends by default.

Configs: ``one-book-constraints``, ``two-book-constraints``, ``author-metadata`` (KITAB's
columns; the first two add ``query_id`` last, author-metadata ``synthetic`` last: KITAB's
readers ignore a column they do not know), ``book-metadata`` (one row per book, ``synthetic``
last), and
``constraints`` and ``rejects`` (byte-for-byte copies of the warehouse's partitions, so their
sha256 equal the ledger's checksums). Every config has one split, ``test``, like KITAB's card.

The folder is a pure function of the release: exporting again gives identical bytes (rows in
a fixed order, deterministic Parquet and PNG, no export timestamp). It is built in a temp
folder beside ``out`` and renamed into place; an existing non-empty ``out`` with different
contents is replaced only with ``force``.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from string import Template

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from kitab.core import jsonl
from kitab.core.files import sha256_file, swap_dir
from kitab.core.outputs import check_folder
from kitab.core.warehouse import Warehouse
from kitab.release.report import quality_section
from tasks.entities.registry import and_list, export_columns, release_kinds

TEMPLATE = Path(__file__).resolve().parent / "templates" / "dataset_card.md"
SPLIT = "test"
LICENSE = "mit"
CARD = "README.md"
PROVENANCE = "provenance.json"

KITAB_QUERY_COLUMNS = (
    '"Author"',
    '"Birth Year"',
    '"# of sitelinks"',
    "constraint_id",
    "constraint_type",
    "constraints",
    "mapped_books",
    "all_books",
    "raw_books",
)
KITAB_AUTHOR_COLUMNS = ('"Author"', '"Birth Year"', '"# of sitelinks"', '"WikiData ID"', '"OpenLibrary ID"')


LAYOUTS = ("hf", "kitab")
PROMPT_TEMPLATE = "no-context"  # the prompt column: Template 2a, kitab answer's default


@dataclass(frozen=True)
class Config:
    name: str
    description: str
    sql: str | None = None  # a query over the release-scoped views ...
    table: str | None = None  # ... or a warehouse table, copied as is
    kitab_file: str | None = None  # KITAB's own file of this config (layout "kitab")
    prompts: bool = False  # add the ``prompt`` column (query configs)

    @property
    def path(self) -> str:
        return f"data/{self.name}/{SPLIT}-00000-of-00001.parquet"

    def path_in(self, layout: str) -> str:
        """The file the card's config names in ``layout``. In the KITAB layout every config is
        JSON lines: ``datasets`` reads every config of a card with the first config's format
        (datasets #7101), so one Parquet config among JSON ones would not load."""
        if layout != "kitab":
            return self.path
        return self.kitab_file or f"data/{self.name}/{SPLIT}-00000-of-00001.jsonl"


def _kitab_queries(view: str) -> str:
    return (
        f"SELECT {', '.join(KITAB_QUERY_COLUMNS)}, query_id, unsure_books FROM {view} "
        'ORDER BY "# of sitelinks" DESC, "Author", constraint_id, query_id'
    )


CONFIGS: tuple[Config, ...] = (
    Config(
        "one-book-constraints",
        "queries with one book constraint besides the author (KITAB's columns + query_id, unsure_books, prompt)",
        sql=_kitab_queries("kitab_one_book_constraints"),
        kitab_file="data/KITAB-ONE-BOOK-CONSTRAINTS.json",
        prompts=True,
    ),
    Config(
        "two-book-constraints",
        "queries with two book constraints besides the author (KITAB's columns + query_id, unsure_books, prompt)",
        sql=_kitab_queries("kitab_two_book_constraints"),
        kitab_file="data/KITAB-TWO-BOOK-CONSTRAINTS.json",
        prompts=True,
    ),
    Config(
        "author-metadata",
        "authors with at least one query (KITAB's columns + synthetic)",
        sql=f"SELECT {', '.join(KITAB_AUTHOR_COLUMNS)}, synthetic FROM kitab_author_metadata "
        'ORDER BY "# of sitelinks" DESC, "Author", "WikiData ID"',
        kitab_file="data/KITAB-author-metadata.json",
    ),
    Config(
        "book-metadata",
        "one row per book: variants, first year, Open Library works, ${entity_names} names, synthetic",
        sql="""
            SELECT b.book_id, b.author_qid, a.name AS author, b.canonical_title, b.first_year, b.n_variants,
                   b.variant_titles,
                   coalesce(v.work_keys, []::VARCHAR[])       AS work_keys,${entity_columns}
                   coalesce(v.synthetic, false)               AS synthetic
            FROM books b
            JOIN authors a ON a.qid = b.author_qid
            LEFT JOIN (SELECT book_id, ${entity_pivot} FROM book_entity_flags GROUP BY book_id) f
                   ON f.book_id = b.book_id
            LEFT JOIN (SELECT t.book_id, list(t.work_key ORDER BY t.work_key) AS work_keys,
                              bool_or(kitab_synthetic_id(t.work_key, w.source)) AS synthetic
                       FROM title_variants t JOIN authors w ON w.qid = t.author_qid
                       GROUP BY t.book_id) v ON v.book_id = b.book_id
            ORDER BY b.author_qid, b.book_id""",
    ),
    Config(
        "constraints", "every candidate constraint per author, before sampling (kitab's table)", table="constraints"
    ),
    Config("rejects", "every record a stage dropped, with reason and evidence (kitab's table)", table="rejects"),
    Config(
        "claim-pairs",
        "NoCha-style minimal pairs: one true and one false claim per pair, one slot apart (kitab's table claims; "
        "docs/claims.md)",
        table="claims",
    ),
    Config(
        "baselines",
        "the validity battery: each no-knowledge baseline's score per task and metric with its 95% interval, "
        "scored at publish time (kitab's table baselines; the floor and ceiling below)",
        table="baselines",
    ),
)
CONFIG_NAMES = tuple(c.name for c in CONFIGS)


# -- the entity kinds' columns (book-metadata, the card): KITAB's human and city always, and
# every other kind the release tagged (tasks/entities/registry.release_kinds)
def release_configs(kinds: tuple[str, ...]) -> tuple[Config, ...]:
    """CONFIGS with book-metadata's entity columns (a flag and the names per kind) filled in."""
    columns = "".join(
        f"\n                   coalesce(f.{flag}, false) AS {flag},"
        f"\n                   coalesce(f.{names}, []::VARCHAR[]) AS {names},"
        for flag, names in (export_columns(k) for k in kinds)
    )
    pivot = (
        ", ".join(
            f"bool_or(has_name) FILTER (WHERE kind = '{k}') AS {export_columns(k)[0]}, "
            f"any_value(names) FILTER (WHERE kind = '{k}') AS {export_columns(k)[1]}"
            for k in kinds
        )
        or "NULL AS none"
    )
    fill = {"entity_columns": columns, "entity_pivot": pivot, "entity_names": and_list(kinds)}
    return tuple(
        dataclasses.replace(
            c,
            description=Template(c.description).safe_substitute(fill),
            sql=Template(c.sql).safe_substitute(fill) if c.sql else None,
        )
        for c in CONFIGS
    )


def _entity_columns_text(kinds: tuple[str, ...]) -> str:
    """The card's words for book-metadata's entity columns: "`has_human_name` / `human_names`, ..."."""
    return ", ".join("`{}` / `{}`".format(*export_columns(k)) for k in kinds)


class ExportExists(FileExistsError):
    """``out`` holds something else; pass ``force=True`` to replace it."""


# -- small helpers ---------------------------------------------------------------------
def _plain_lists(table: pa.Table) -> pa.Table:
    """DuckDB names list children ``l``; use Arrow's standard ``item`` (what datasets writes)."""

    def plain(t: pa.DataType) -> pa.DataType:
        return pa.list_(plain(t.value_type)) if pa.types.is_list(t) else t

    return table.cast(pa.schema([pa.field(f.name, plain(f.type), f.nullable) for f in table.schema]))


def _iso(ts) -> str:
    if isinstance(ts, datetime):
        return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(ts)


def _md_table(header: tuple[str, ...], rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _size_category(n: int) -> str:
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < limit:
            return label
    return "10M<n<100M"


def _tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative POSIX path) with its sha256."""
    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}


# -- ledger ----------------------------------------------------------------------------
def _ledger(wh: Warehouse, release: str) -> tuple[dict, list[dict]]:
    """This release's row of the ``releases`` ledger, and the releases committed before it
    (by creation time, then id): later releases never change an earlier release's card. Each
    row is checked against its digests first: an edited one is never published, and this
    release's own row must be sealed (`kitab verify --seal`)."""
    for other in wh.committed_releases():
        wh.ledger_row(other, unsealed="refuse" if other == release else "warn")
    rows = wh.read_table("releases").to_pylist()
    this = next(r for r in rows if r["release"] == release)
    key = (this["created_at"], this["release"])
    earlier = sorted(
        (r for r in rows if (r["created_at"], r["release"]) < key),
        key=lambda r: (r["created_at"], r["release"]),
        reverse=True,
    )
    return this, earlier


# -- the card --------------------------------------------------------------------------
def card_metadata(release: str, rows: dict[str, int], layout: str = "hf") -> dict:
    """The card's YAML header; ``configs`` lists every config with its one file (the first is
    the default: ``load_dataset(folder)`` works without a config name)."""
    n_queries = rows.get("one-book-constraints", 0) + rows.get("two-book-constraints", 0)
    return {
        "license": LICENSE,
        "pretty_name": f"KITAB rebuild (kitab release {release})",
        "language": ["en"],
        "task_categories": ["question-answering", "text-generation"],
        "tags": ["kitab", "constraint-satisfaction", "information-retrieval", "books", "benchmark"],
        "size_categories": [_size_category(n_queries)],
        "configs": [
            {
                "config_name": c.name,
                "data_files": [{"split": SPLIT, "path": c.path_in(layout)}],
                **({"default": True} if i == 0 else {}),
            }
            for i, c in enumerate(CONFIGS)
        ],
    }


def _source_note(ledger: dict) -> str:
    from kitab.sources.kinds import source_kind

    if source_kind(ledger["source"]).reads_live_services:
        return f"Built from the live WikiData Query Service and Open Library API (`{ledger['snapshot_id'] or 'live'}`)."
    note = (
        f"Built from the snapshot `{ledger['snapshot_id']}` (source `{ledger['source']}`), not from the live services."
    )
    if str(ledger["snapshot_id"] or "").startswith("kitab-s"):
        note += (
            " Snapshots made by `kitab snapshot generate`, such as kitab's bundled one, mix real public "
            "seed rows with seeded synthetic records: this release demonstrates the pipeline and is not "
            "a benchmark of real bibliographies."
        )
    return note


def synthetic_authors(con, source: str) -> tuple[int, int]:
    """(synthetic, all) released authors of the release ``con`` is scoped to: synthetic = made
    up by kitab's snapshot generator (sql/staging/synthetic_ids.sql)."""
    return con.execute(
        "SELECT count(*) FILTER (WHERE kitab_synthetic_id(qid, ?)), count(*) FROM released_authors", [source]
    ).fetchone()


def _synthetic_banner(synthetic: int, total: int) -> str:
    if not synthetic:
        return ""
    return (
        f"\n> **Synthetic data: {synthetic} of {total} authors ({synthetic / total:.0%}) in this release "
        "were made up by kitab's snapshot generator** (column `synthetic` in `author-metadata` and "
        "`book-metadata`). It demonstrates the pipeline; it is not a benchmark of real authors and "
        "their books.\n"
    )


def _inputs_table(ledger: dict) -> str:
    inputs = json.loads(ledger.get("inputs") or "null")
    if not inputs:
        return "Not recorded (a release made before kitab recorded its inputs)."
    if "service" in inputs[0]:
        return _md_table(("service", "URL", "read on"), [(i["service"], f"`{i['url']}`", i["date"]) for i in inputs])
    return _md_table(
        ("file", "kind", "bytes", "dump date", "fingerprint", "snapshot"),
        [
            (f"`{i['name']}`", i["kind"], i["size"], i["dump_date"], f"`{i['fingerprint']}`", f"`{i['snapshot_id']}`")
            for i in inputs
        ],
    )


def _render_card(
    release: str,
    ledger: dict,
    earlier: list[dict],
    rows: dict[str, int],
    files: dict[str, dict],
    quality: str,
    layout: str,
    synthetic: tuple[int, int] = (0, 0),
    kinds: tuple[str, ...] = (),
) -> str:
    header = yaml.safe_dump(card_metadata(release, rows, layout), sort_keys=False, allow_unicode=True, width=1000)
    configs_table = _md_table(
        ("config", "split", "file", "rows", "contents"),
        [(f"`{c.name}`", SPLIT, f"`{c.path_in(layout)}`", rows[c.name], c.description) for c in release_configs(kinds)],
    )
    if earlier:
        previous = _md_table(
            ("release", "created (UTC)", "seed", "source", "snapshot", "queries"),
            [
                (
                    f"`{r['release']}`",
                    _iso(r["created_at"]),
                    r["seed"],
                    r["source"],
                    f"`{r['snapshot_id']}`" if r["snapshot_id"] else "",
                    json.loads(r["counts"]).get("queries", ""),
                )
                for r in earlier
            ],
        )
    else:
        previous = "None: this is the warehouse's first release."
    provenance = _md_table(
        ("field", "value"),
        [
            ("release id (version, Hub tag)", f"`{release}`"),
            ("created (UTC)", _iso(ledger["created_at"])),
            ("sampling seed", ledger["seed"]),
            ("source", ledger["source"]),
            ("snapshot", f"`{ledger['snapshot_id']}`" if ledger["snapshot_id"] else ""),
            ("authors requested", ledger["n_authors_requested"]),
            ("HTTP requests sent by the refresh", "" if ledger["requests_made"] is None else ledger["requests_made"]),
            ("kitab code version", f"`{ledger['code_version']}`"),
        ],
    )
    counts, checksums = json.loads(ledger["counts"]), json.loads(ledger["checksums"])
    warehouse_table = _md_table(
        ("table", "rows", "sha256"),
        [(f"`{t}`", counts.get(t, ""), f"`{checksums.get(t, '')}`") for t in sorted(counts)],
    )
    files_table = _md_table(
        ("file", "rows", "sha256"),
        [
            (f"`{path}`", "" if info.get("rows") is None else info["rows"], f"`{info['sha256']}`")
            for path, info in files.items()
        ],
    )
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        yaml_header=header,
        pretty_name=f"KITAB rebuild: kitab release {release}",
        release=release,
        created_at=_iso(ledger["created_at"]),
        source_note=_source_note(ledger),
        synthetic_banner=_synthetic_banner(*synthetic),
        inputs_table=_inputs_table(ledger),
        configs_table=configs_table,
        previous_releases=previous,
        provenance_table=provenance,
        warehouse_table=warehouse_table,
        files_table=files_table,
        quality=quality,
        entity_columns=_entity_columns_text(kinds),
        entity_names=and_list(kinds),
    )


def card_configs(card_text: str) -> dict[str, dict[str, str]]:
    """``{config: {split: path}}`` from a card's YAML header (what ``datasets`` reads)."""
    if not card_text.startswith("---\n"):
        raise ValueError("the card has no YAML header")
    meta = yaml.safe_load(card_text[4 : card_text.index("\n---\n", 4)])
    return {c["config_name"]: {f["split"]: f["path"] for f in c["data_files"]} for c in meta.get("configs", [])}


# -- building the folder ---------------------------------------------------------------
def _with_prompts(table: pa.Table) -> pa.Table:
    """``table`` (KITAB query rows) with a last column ``prompt``: Template 2a for each row."""
    from kitab.release.prompts import render_prompt

    rows = table.select(["Author", "Birth Year", "constraints", "all_books"]).to_pylist()
    prompts = [
        render_prompt(
            PROMPT_TEMPLATE,
            author=r["Author"],
            birth_year=r["Birth Year"],
            constraints=r["constraints"],
            all_books=ast.literal_eval(r["all_books"]),
        )
        for r in rows
    ]
    return table.append_column("prompt", pa.array(prompts, pa.string()))


def _write_json_lines(table: pa.Table, path: Path) -> None:
    """KITAB's format: one JSON object per line (a ``.json`` file), KITAB's column names."""
    with open(path, "w", encoding="utf-8") as fh:
        for row in table.to_pylist():
            fh.write(jsonl.dumps(row, default=str) + "\n")  # timestamps as ISO text


def _build(wh: Warehouse, release: str, folder: Path, layout: str = "hf") -> dict:
    ledger, earlier = _ledger(wh, release)
    rows: dict[str, int] = {}
    files: dict[str, dict] = {}
    with wh.connect(release=release) as con:
        kinds = release_kinds(k for (k,) in con.execute("SELECT DISTINCT kind FROM book_entities").fetchall())
        configs = release_configs(kinds)
        for config in configs:
            target = folder / config.path
            target.parent.mkdir(parents=True)
            if config.table is not None:
                source = wh.committed_files(release)[config.table]
                shutil.copyfile(source, target)
                rows[config.name] = pq.ParquetFile(target).metadata.num_rows
                table = _plain_lists(pq.read_table(target)) if layout == "kitab" else None
            else:
                table = _plain_lists(con.sql(config.sql).to_arrow_table())
                if config.prompts:
                    table = _with_prompts(table)
                pq.write_table(table, target, compression="zstd")
                rows[config.name] = table.num_rows
            if layout == "kitab":  # every config as JSON lines, named by the card
                named = config.path_in(layout)
                _write_json_lines(table, folder / named)
                files[named] = {
                    "config": config.name,
                    "split": SPLIT,
                    "rows": rows[config.name],
                    "sha256": sha256_file(folder / named),
                }
            files[config.path] = {
                "config": config.name,
                "split": SPLIT,
                "rows": rows[config.name],
                "sha256": sha256_file(target),
            }
        quality = quality_section(con, release, folder / "plots")
        synthetic = synthetic_authors(con, ledger["source"])
    for png in sorted((folder / "plots").glob("*.png")):
        files[png.relative_to(folder).as_posix()] = {"sha256": sha256_file(png)}
    provenance = {
        "release": release,
        "version": release,
        "hub_tag": release,
        "ledger": {
            k: _iso(v)
            if k == "created_at"
            else json.loads(v)
            if k in ("counts", "checksums", "stages", "inputs", "digests") and v is not None
            else v
            for k, v in ledger.items()
            if k != "release"
        },
        "earlier_releases": [r["release"] for r in earlier],
        "synthetic_authors": {"synthetic": synthetic[0], "authors": synthetic[1]},
        "layout": layout,
        "configs": {c.name: {"split": SPLIT, "path": c.path_in(layout), "rows": rows[c.name]} for c in CONFIGS},
        "files": files,
    }
    (folder / PROVENANCE).write_text(
        json.dumps(provenance, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (folder / CARD).write_text(
        _render_card(release, ledger, earlier, rows, files, quality, layout, synthetic, kinds), encoding="utf-8"
    )
    return rows


def release_of(provenance: dict) -> str | None:
    """The release a provenance.json describes (exports before kitab named it ``release``
    wrote ``release_id``)."""
    return provenance.get("release", provenance.get("release_id"))


COMMAND = "kitab export"


def export_manifest(folder: Path) -> dict | None:
    """An earlier export's manifest: its ``provenance.json`` names every file it wrote (the card
    and provenance.json aside), so the dataset folder carries no file of kitab's own."""
    try:
        provenance = json.loads((folder / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(provenance, dict) or not isinstance(provenance.get("files"), dict):
        return None
    files = [*provenance["files"], CARD, PROVENANCE]
    return {"command": COMMAND, "files": files, "release": release_of(provenance)}


def _refuse(out: Path) -> ExportExists:
    return ExportExists(
        f"{out} holds an earlier export of another release (or other files of it); "
        "use --overwrite to replace it, or choose another --out"
    )


def _install(tmp: Path, out: Path, force: bool) -> bool:
    """Move the built folder ``tmp`` to ``out``; False when ``out`` already holds the same files."""
    if out.is_symlink() or out.exists():
        if out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
            out.rmdir()
        elif out.is_dir() and not out.is_symlink() and _tree(out) == _tree(tmp):
            return False
        elif not force:
            raise _refuse(out)
    swap_dir(tmp, out)
    return True


def export_release(warehouse: Path, release: str, out: Path, *, force: bool = False, layout: str = "hf") -> dict:
    """Write release ``release`` of ``warehouse`` as a Hugging Face dataset folder at ``out``
    (``layout="kitab"``: also KITAB's JSON-lines files, which the card's configs then name).

    Returns ``{"release", "out", "files", "rows", "written"}``: the folder's files (relative
    paths), rows per config, and whether ``out`` changed (False: it already held exactly
    this export). Raises ``ValueError`` for an uncommitted release and ``ExportExists`` when
    ``out`` holds something else and ``force`` is False.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")
    wh = Warehouse(Path(warehouse))
    wh.require_release(release)
    # the output-path rule (kitab/core/outputs.py): new, empty, or an earlier export, all its files listed
    earlier = check_folder(out, "--out", COMMAND, [wh.root], manifest=export_manifest).earlier
    out = Path(out).absolute()
    if not force and earlier is not None and earlier["release"] != release:
        raise _refuse(out)  # fail fast; an older export of the same release is compared after the build
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        rows = _build(wh, release, tmp, layout)
        files = sorted(_tree(tmp))
        written = _install(tmp, out, force)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"release": release, "out": str(out), "files": files, "rows": rows, "written": written}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
