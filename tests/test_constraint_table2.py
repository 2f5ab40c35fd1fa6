"""Table 2 (queries and mean constrainedness per type) and the benchmark script's input."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tasks.constraints.table2 import PAPER_TABLE2, SUMMARY, format_table2, table2

ROOT = Path(__file__).resolve().parents[1]


def constraint(cid, spec):
    return {"constraint_id": cid, "spec": spec}


CONSTRAINTS = [
    constraint("Q1:starts_with:b", '{"letter": "b", "type": "starts_with"}'),
    constraint("Q1:year_range:1970-1974", '{"from": 1970, "to": 1974, "type": "year_range"}'),
    constraint("Q1:human_name:present", '{"present": true, "type": "human_name"}'),
    constraint("Q1:human_name:absent", '{"present": false, "type": "human_name"}'),
]


def query(ids, kappa):
    return {"constraint_ids": ids, "n_constraints": len(ids), "constrainedness": kappa}


def test_counts_and_means_per_type():
    queries = [
        query(["Q1:starts_with:b"], 0.8),
        query(["Q1:starts_with:b"], 0.6),
        query(["Q1:human_name:absent"], 0.2),
        query(["Q1:starts_with:b", "Q1:year_range:1970-1974"], 0.9),
        query(["Q1:human_name:present", "Q1:year_range:1970-1974"], 0.7),
    ]
    rows = {row["type"]: row for row in table2(CONSTRAINTS, queries)}
    assert list(rows) == [*(label for label in PAPER_TABLE2 if label != SUMMARY), SUMMARY]
    assert rows["starts-with"] == {
        "type": "starts-with",
        "one_queries": 2,
        "one_kappa": pytest.approx(0.7),
        "two_queries": 1,
        "two_kappa": pytest.approx(0.9),
    }
    assert rows["no-human-name"]["one_queries"] == 1 and rows["human-name"]["one_queries"] == 0
    assert rows["human-name"]["one_kappa"] is None and rows["human-name"]["two_queries"] == 1
    # a two-constraint query counts under each of its types, but once in the summary
    assert rows["publishing-year"]["two_queries"] == 2
    assert rows["publishing-year"]["two_kappa"] == pytest.approx(0.8)
    assert rows[SUMMARY] == {
        "type": SUMMARY,
        "one_queries": 3,
        "one_kappa": pytest.approx(1.6 / 3),
        "two_queries": 2,
        "two_kappa": pytest.approx(0.8),
    }


def test_formatter_prints_ours_beside_the_paper():
    text = format_table2(table2(CONSTRAINTS, [query(["Q1:starts_with:b"], 0.8)]))
    lines = text.splitlines()
    assert lines[0].split() == ["type", "one:", "ours", "one:", "paper", "two:", "ours", "two:", "paper"]
    starts = next(line for line in lines if line.startswith("starts-with"))
    assert "1 / 0.80" in starts and "598 / 0.90" in starts and "2163 / 0.92" in starts
    assert "0 / -" in next(line for line in lines if line.startswith("ends-with"))
    assert next(line for line in lines if line.startswith(SUMMARY)).split()[-3:] == ["4750", "/", "0.87"]


def test_benchmark_runs_on_its_generated_input():
    spec = importlib.util.spec_from_file_location("table2_benchmark", ROOT / "benchmarks" / "table2.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    authors, books, flags = bench.synthetic_inputs(n_authors=15, seed=1)
    assert bench.synthetic_inputs(n_authors=15, seed=1) == (authors, books, flags)
    rows, generated, sampled = bench.run(authors, books, flags, seed=1)
    assert generated["authors"] == 15 and rows[-1]["type"] == SUMMARY
    assert rows[-1]["one_queries"] == sampled["queries_one"] > 0


def test_the_benchmark_keeps_kitabs_configured_rates_apart_from_the_papers_measured_ones():
    spec = importlib.util.spec_from_file_location("table2_benchmark", ROOT / "benchmarks" / "table2.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from tasks.sample_queries import SamplingRates

    authors, books, flags = bench.synthetic_inputs(n_authors=15, seed=1)
    rates = SamplingRates(one_unsatisfiable_share=0.2, two_more_books=0.3)
    _, _, sampled = bench.run(authors, books, flags, seed=1, rates=rates)
    configured, measured, paper = bench.rates_text(rates, sampled).split("\n\n")
    assert configured.startswith("kitab's configured") and "topped up to 20%" in configured
    assert "30% to more" in configured and "7.99%" not in configured
    assert f"one-constraint queries: {sampled['queries_one']}" in measured
    assert paper.startswith("measured by the paper") and "7.99%" in paper and "8239" in paper
