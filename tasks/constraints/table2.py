"""The paper's Table 2 (queries and mean constrainedness per constraint type) for our sample,
and a formatter that prints it beside the paper's numbers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean

from tasks.constraints.registry import spec_from_json

SUMMARY = "Summary"

# kitab-original.md §2.4 (paper Table 2): type -> (one-constraint queries, mean κ,
# two-constraint queries, mean κ); two-constraint rows count a query under each type it has.
PAPER_TABLE2: dict[str, tuple[int, float, int, float]] = {
    "starts-with": (598, 0.90, 2163, 0.92),
    "ends-with": (482, 0.89, 1782, 0.91),
    "word-count": (1672, 0.53, 1630, 0.81),
    "human-name": (611, 0.77, 292, 0.89),
    "no-human-name": (611, 0.23, 801, 0.78),
    "city-name": (611, 0.92, 197, 0.81),
    "no-city-name": (611, 0.08, 831, 0.77),
    "publishing-year": (3043, 0.80, 1804, 0.89),
    SUMMARY: (8239, 0.67, 4750, 0.87),
}


def table2(constraints_rows: Iterable[Mapping], queries_rows: Iterable[Mapping]) -> list[dict]:
    """Rows ``{"type", "one_queries", "one_kappa", "two_queries", "two_kappa"}`` in the
    paper's type order (types the paper lacks follow, by name), then the Summary row.

    A query counts once under each type label it contains (a two-constraint query under
    both of its types, as the paper does); κ is the query's own (joint) constrainedness.
    The Summary counts each query once. Mean κ is None where there are no queries.
    """
    labels = {row["constraint_id"]: spec_from_json(row["spec"]).label for row in constraints_rows}
    kappas: dict[tuple[str, int], list[float]] = defaultdict(list)
    for query in queries_rows:
        size = query["n_constraints"]
        for label in dict.fromkeys(labels[cid] for cid in query["constraint_ids"]):
            kappas[label, size].append(query["constrainedness"])
        kappas[SUMMARY, size].append(query["constrainedness"])
    known = [label for label in PAPER_TABLE2 if label != SUMMARY]
    extra = sorted({label for label, _ in kappas} - set(PAPER_TABLE2))
    return [
        {
            "type": label,
            "one_queries": len(kappas[label, 1]),
            "one_kappa": fmean(kappas[label, 1]) if kappas[label, 1] else None,
            "two_queries": len(kappas[label, 2]),
            "two_kappa": fmean(kappas[label, 2]) if kappas[label, 2] else None,
        }
        for label in [*known, *extra, SUMMARY]
    ]


def format_table2(rows: Sequence[Mapping], paper: Mapping[str, tuple[int, float, int, float]] = PAPER_TABLE2) -> str:
    """Plain-text table: ours beside the paper's, "# queries / mean κ" per cell."""

    def cell(n: int | None, kappa: float | None) -> str:
        if n is None:
            return "-"
        return f"{n} / {kappa:.2f}" if kappa is not None else f"{n} / -"

    header = ("type", "one: ours", "one: paper", "two: ours", "two: paper")
    lines = [header]
    for row in rows:
        one_n, one_k, two_n, two_k = paper.get(row["type"], (None, None, None, None))
        lines.append(
            (
                row["type"],
                cell(row["one_queries"], row["one_kappa"]),
                cell(one_n, one_k),
                cell(row["two_queries"], row["two_kappa"]),
                cell(two_n, two_k),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join([line[0].ljust(widths[0]), *(text.rjust(width) for text, width in zip(line[1:], widths[1:]))])
        for line in lines
    )
