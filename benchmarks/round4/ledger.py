"""Issue 39 item 3's probes (surface "ledger"): a ledger row edited in its Parquet (with pyarrow,
as a person would) is refused by every command that reads it, in one line naming the field,
and nothing is written from it; an unedited row and a legitimate rebuild still pass; a row from
before digests is said and sealed by ``kitab verify --seal``. Each probe on a copy of the clean
release."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import faults

SURFACE = "ledger"


def _ledger(root: Path) -> Path:
    return root / "tables" / "releases" / f"release={faults.RELEASE}" / "part-0.parquet"


def _edit(root: Path, change) -> dict:
    """Rewrite the ledger row with pyarrow, ``change(row)`` editing its dict; the true row back."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(_ledger(root))
    row = table.to_pylist()[0]
    true = dict(row)
    change(row)
    pq.write_table(pa.Table.from_pylist([row], schema=table.schema), _ledger(root))
    return true


def _config_edit(key: str, value):
    def change(row):
        config = json.loads(row["config"])
        config[key] = value(config[key])
        row["config"] = json.dumps(config, sort_keys=True)

    return change


CONFIG_EDITS = {
    "authors": _config_edit("authors", lambda n: n + 20),
    "a sampling rate": _config_edit(
        "sampling_rates", lambda rates: {k: (v / 2 if isinstance(v, float) else v) for k, v in rates.items()}
    ),
    "the language rule": _config_edit("language_rule", lambda rule: "any language"),
}


def _named(result: dict, field: str) -> bool:
    return f"was edited ({field})" in result["stderr"]


def _one_line(result: dict) -> bool:
    """Refused in one stderr line, no traceback (verify also lists its findings on stdout)."""
    return result["exit"] != 0 and result["lines"] == 1 and not result["traceback"]


def _rebuild_args(true: dict, root: Path) -> list:
    """The refresh that made the clean release, with its true parameters (from the row before
    the edit), on the local runner: refused before any work either way."""
    config = json.loads(true["config"])
    return [
        "refresh", "--runner", "local", "--source", config["source"], "--authors", config["authors"],
        "--seed", config["seed"], "--release", faults.RELEASE, "--warehouse", root,
    ]  # fmt: skip


def config_probes(clean: Path, out: Path) -> list[dict]:
    rows = []
    for name, change in CONFIG_EDITS.items():
        root = faults.copy_release(clean, out / f"ledger-{name.replace(' ', '-')}")
        true = _edit(root, change)
        edit = f"config edited ({name})"
        verify = faults.kitab_cli("verify", "--warehouse", root)
        rows.append(
            faults.probe(
                f"{edit}: verify",
                SURFACE,
                _one_line(verify) and _named(verify, "config"),
                f"exit {verify['exit']}: {(verify['first'] or verify['stdout'].strip())[:90]}",
                verify,
            )
        )
        for args in (["releases", "--show", faults.RELEASE], ["report", "--release", faults.RELEASE]):
            written = out / f"ledger-report-{name.replace(' ', '-')}"
            more = ["--out", written] if args[0] == "report" else []
            r = faults.kitab_cli(*args, *more, "--warehouse", root)
            printed = name.split()[-1] in r["stdout"] or str(json.loads(true["config"])["authors"] + 20) in r["stdout"]
            rows.append(
                faults.probe(
                    f"{edit}: {' '.join(args[:2]) if args[0] == 'releases' else 'report --out'}",
                    SURFACE,
                    faults.spoke(r) and _named(r, "config") and not written.exists(),
                    f"exit {r['exit']}, printed the row: {r['exit'] == 0 and printed}, wrote: {written.exists()}",
                    r,
                )
            )
        hf = out / f"ledger-hf-{name.replace(' ', '-')}"
        r = faults.kitab_cli("export", "--release", faults.RELEASE, "--out", hf, "--warehouse", root)
        published = (hf / "provenance.json").exists()
        rows.append(
            faults.probe(
                f"{edit}: export",
                SURFACE,
                faults.spoke(r) and _named(r, "config") and not hf.exists(),
                f"exit {r['exit']}, provenance.json written: {published}",
                r,
            )
        )
        r = faults.kitab_cli(*_rebuild_args(true, root))
        rows.append(
            faults.probe(
                f"{edit}: rebuild with the true parameters",
                SURFACE,
                faults.spoke(r) and _named(r, "config"),
                f"exit {r['exit']}: {r['first'][:90]}",
                r,
            )
        )
    return rows


FIELD_EDITS = {
    "counts": lambda row: row.update(counts=json.dumps({**json.loads(row["counts"]), "books": 1})),
    "checksums": lambda row: row.update(
        checksums=json.dumps({**json.loads(row["checksums"]), "queries": "0" * 64}, sort_keys=True)
    ),
    "inputs": lambda row: row.update(inputs="[]"),
    "seed": lambda row: row.update(seed=row["seed"] + 1),
}


def field_probes(clean: Path, out: Path) -> list[dict]:
    rows = []
    for field, change in FIELD_EDITS.items():
        root = faults.copy_release(clean, out / f"ledger-{field}")
        _edit(root, change)
        verify = faults.kitab_cli("verify", "--warehouse", root)
        hf = out / f"ledger-hf-{field}"
        export = faults.kitab_cli("export", "--release", faults.RELEASE, "--out", hf, "--warehouse", root)
        rows.append(
            faults.probe(
                f"{field} edited: verify and export",
                SURFACE,
                _one_line(verify) and _named(verify, field) and faults.spoke(export) and not hf.exists(),
                f"verify exit {verify['exit']}, names {field}: {_named(verify, field)}; export exit "
                f"{export['exit']}, written: {hf.exists()}",
                verify,
                export,
            )
        )
    root = faults.copy_release(clean, out / "ledger-sql")
    _edit(root, CONFIG_EDITS["authors"])
    books = faults.kitab_cli("sql", "select count(*) from books", "--output", "csv", "--warehouse", root)
    row = faults.kitab_cli("sql", "select config from releases", "--warehouse", root)
    rows.append(
        faults.probe(
            "config edited: sql over books answers, over the row fails",
            SURFACE,
            books["exit"] == 0 and faults.spoke(row) and _named(row, "config"),
            f"books exit {books['exit']}; releases exit {row['exit']}: {row['first'][:80]}",
            row,
        )
    )
    return rows


def seal_probes(clean: Path, out: Path) -> list[dict]:
    import pyarrow.parquet as pq

    rows = []
    control = faults.kitab_cli("verify", "--warehouse", clean)
    rows.append(
        faults.probe(
            "unedited release: verify",
            SURFACE,
            control["exit"] == 0,
            f"exit {control['exit']}: {control['stdout'].strip()[:80]}",
            control,
        )
    )
    root = faults.copy_release(clean, out / "ledger-unsealed")
    table = pq.read_table(_ledger(root))
    if "digests" in table.column_names:  # a row as written before digests
        pq.write_table(table.drop_columns(["digests"]), _ledger(root))
    before = faults.kitab_cli("verify", "--warehouse", root)
    hf = out / "ledger-hf-unsealed"
    export = faults.kitab_cli("export", "--release", faults.RELEASE, "--out", hf, "--warehouse", root)
    seal = faults.kitab_cli("verify", "--seal", "--warehouse", root)
    after = faults.kitab_cli("verify", "--warehouse", root)
    rows.append(
        faults.probe(
            "row without digests (older warehouse): verify, export, verify --seal",
            SURFACE,
            before["exit"] != 0
            and "unsealed" in before["stderr"]
            and faults.spoke(export)
            and not hf.exists()
            and seal["exit"] == 0
            and after["exit"] == 0,
            f"verify exit {before['exit']}, export exit {export['exit']} (written: {hf.exists()}), "
            f"--seal exit {seal['exit']}, then verify exit {after['exit']}",
            before,
            export,
        )
    )
    return rows


def probes(clean: Path, out: Path) -> list[dict]:
    return [*config_probes(clean, out), *field_probes(clean, out), *seal_probes(clean, out)]
