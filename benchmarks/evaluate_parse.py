"""How fast `kitab evaluate` reads a hostile answers file: ~200 MB, every response just under
the caps (MAX_RESPONSE_CHARS characters, the file under MAX_FILE_BYTES), in the shapes a
verbose or hostile model writes (issue 31, item 8):

- **reason_title**: KITAB's format, thousands of ``N. Reason: … Title: …`` lines whose reasons
  quote other titles ("its original title: …") and years;
- **one_line**: the same text with no newline at all (one 190,000-character line);
- **wide_lines**: lines of exactly MAX_LINE_CHARS characters, each packed with ``Reason:`` and
  ``Title:`` keys none of which follows the end of a sentence;
- **list**: a numbered list of thousands of bold titles with years and dashes;
- **reasoning**: ``<think>`` blocks (nested, unclosed tags inside) around the list, answer markers
  in the reasoning;
- **spaces**: ``title`` and ``reason`` keys followed by long runs of spaces and tabs, quotes that
  never close, ``(`` without a year;
- **table**: a markdown table of thousands of rows;
- **json**: a fenced JSON list of ``{"title": …}`` objects.

It times reading the file and parsing every answer (in this process), then the real
``kitab evaluate`` on it (a subprocess), and reports seconds and MB/s.

    .venv/bin/kitab demo --warehouse /tmp/wh
    .venv/bin/python benchmarks/evaluate_parse.py --warehouse /tmp/wh --release demo [--mb 200] [--json]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import argparse  # noqa: E402
import ast  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from kitab.core.warehouse import Warehouse  # noqa: E402
from kitab.release.evaluation.answers import MAX_FILE_BYTES, MAX_RESPONSE_CHARS, read_answers  # noqa: E402
from kitab.release.evaluation.parse import MAX_LINE_CHARS, read_answer  # noqa: E402

SHAPES = ("reason_title", "one_line", "wide_lines", "list", "reasoning", "spaces", "table", "json")


def _fill(make_line, limit: int) -> str:
    """Lines from ``make_line(i)`` up to ``limit`` characters."""
    parts, size, i = [], 0, 0
    while True:
        line = make_line(i)
        if size + len(line) > limit:
            return "".join(parts)
        parts.append(line)
        size += len(line)
        i += 1


def response(shape: str, titles: list[str], limit: int, rng: random.Random) -> str:
    """One answer of ``shape``, at most ``limit`` characters, naming ``titles`` (the author's)
    and made-up ones."""

    def title(i: int) -> str:
        return titles[i % len(titles)] if titles and i % 3 else f"Made Up Book {rng.randrange(10**6)}"

    def reason_line(i: int) -> str:
        return (
            f"{i + 1}. Reason: The title starts with the letter asked for; its original title: "
            f"{title(i + 1)} (first published {1900 + i % 120}) was changed, see Title: {title(i + 2)}. "
            f"Title: {title(i)} ({1950 + i % 70})\n"
        )

    if shape == "reason_title":
        return _fill(reason_line, limit - 8).join(("Output:\n", ""))
    if shape == "one_line":
        return _fill(reason_line, limit).replace("\n", " ")
    if shape == "wide_lines":
        unit = "Reason: many books Title: x Reason: see the original title: y "

        def wide(i: int) -> str:
            line = (f"{i}. " + unit * (MAX_LINE_CHARS // len(unit) + 1))[: MAX_LINE_CHARS - 12] + "Title: Q"
            return line[:MAX_LINE_CHARS] + "\n"

        return _fill(wide, limit)
    if shape == "list":
        return _fill(lambda i: f"{i + 1}. **{title(i)}** ({1950 + i % 70}) — a novel about {title(i + 5)}\n", limit)
    if shape == "reasoning":
        body = _fill(lambda i: f"- {title(i)} (c. {1900 + i % 100})\n", limit // 2)
        think = _fill(
            lambda i: (
                f"<think>Final answer: maybe {title(i)}? <reasoning>Output: {title(i + 1)}</reasoning> "
                f"unclosed <think tag [THINK] nested [/THINK]</think>\n"
            ),
            limit // 2 - 40,
        )
        return think + "Final Output:\n" + body
    if shape == "spaces":

        def spaced(i: int) -> str:
            pad = " \t" * (50 + i % 400)
            return f"title{pad}reason{pad}Title{pad}: “{title(i)} ({pad} « ' Reason{pad}Title:{pad}\n"

        return _fill(spaced, limit)
    if shape == "table":
        head = "| # | Title | Year |\n|---|---|---|\n"
        return head + _fill(lambda i: f"| {i + 1} | *{title(i)}* | {1950 + i % 70} |\n", limit - len(head))
    if shape == "json":
        items = _fill(lambda i: json.dumps({"title": title(i), "year": 1950 + i % 70}) + ", ", limit - 20)
        return "```json\n[" + items + '{"title": "Last"}]\n```'
    raise ValueError(shape)


def write_answers(warehouse: Path, release: str, path: Path, megabytes: float, shapes=SHAPES) -> dict:
    """An answers file of about ``megabytes`` MB for every query of the release (more samples
    when the queries alone do not reach it), shapes in turn; returns its counts."""
    with Warehouse(warehouse).connect(release=release) as con:
        rows = con.execute("SELECT query_id, all_books FROM kitab_book_constraints ORDER BY query_id").fetchall()
    per = min(MAX_RESPONSE_CHARS - 1_000, int(megabytes * 1e6 / len(rows)))
    samples = max(1, round(megabytes * 1e6 / (per * len(rows))))
    rng = random.Random(31)
    budget = min(MAX_FILE_BYTES - 2**20, int(megabytes * 1e6 * 1.02))
    written, lines, by_shape = 0, 0, {s: 0 for s in shapes}
    with open(path, "w", encoding="utf-8") as out:
        for sample in range(samples):
            for n, (query_id, all_books) in enumerate(rows):
                titles = [t.rsplit(" (", 1)[0] for t in ast.literal_eval(all_books)]
                shape = shapes[(n + sample) % len(shapes)]
                line = json.dumps(
                    {"query_id": query_id, "sample": sample, "response": response(shape, titles, per, rng)},
                    ensure_ascii=False,
                )
                size = len(line.encode("utf-8")) + 1
                if written + size > budget:
                    break
                out.write(line + "\n")
                written, lines = written + size, lines + 1
                by_shape[shape] += 1
    return {"bytes": written, "answers": lines, "response_chars": per, "samples": samples, "shapes": by_shape}


def time_parse(path: Path) -> dict:
    """Read the file and parse every answer, in this process (the part `kitab evaluate` spends
    on the file itself), per shape too."""
    start = time.perf_counter()
    answers, _ = read_answers(path)
    read = time.perf_counter() - start
    titles = 0
    for answer in answers:
        titles += len(read_answer(answer.response).titles)
    total = time.perf_counter() - start
    return {"read_seconds": round(read, 2), "parse_seconds": round(total - read, 2), "titles": titles}


def time_evaluate(warehouse: Path, release: str, path: Path) -> dict:
    kitab = Path(sys.executable).with_name("kitab")
    start = time.perf_counter()
    run = subprocess.run(
        [
            str(kitab),
            "evaluate",
            "--release",
            release,
            "--answers",
            str(path),
            "--model",
            "bench-parse",
            "--output",
            "json",
            "--warehouse",
            str(warehouse),
        ],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"kitab evaluate failed (rc {run.returncode}): {run.stderr.strip()[-2000:]}")
    return {"evaluate_seconds": round(seconds, 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--release", default="demo")
    p.add_argument("--mb", type=float, default=200.0, help="size of the answers file (default 200 MB)")
    p.add_argument("--shape", choices=SHAPES, action="append", help="only these shapes (default: all)")
    p.add_argument("--no-evaluate", action="store_true", help="time the parse only")
    p.add_argument("--keep", type=Path, help="write the answers file here and keep it")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "hostile.jsonl"
        start = time.perf_counter()
        made = write_answers(args.warehouse, args.release, path, args.mb, tuple(args.shape or SHAPES))
        result = {**made, "generate_seconds": round(time.perf_counter() - start, 1), **time_parse(path)}
        if not args.no_evaluate:
            result.update(time_evaluate(args.warehouse, args.release, path))
    mb = result["bytes"] / 1e6
    result["mb"] = round(mb, 1)
    result["parse_mb_per_s"] = round(mb / max(result["read_seconds"] + result["parse_seconds"], 1e-9), 1)
    if "evaluate_seconds" in result:
        result["evaluate_mb_per_s"] = round(mb / result["evaluate_seconds"], 1)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"answers file: {mb:.1f} MB, {result['answers']} answers of <= {result['response_chars']:,} characters")
    print(f"  shapes: {', '.join(f'{k} {v}' for k, v in result['shapes'].items())}")
    print(
        f"read + parse: {result['read_seconds'] + result['parse_seconds']:.1f} s "
        f"({result['parse_mb_per_s']} MB/s; {result['titles']:,} titles)"
    )
    if "evaluate_seconds" in result:
        print(f"kitab evaluate: {result['evaluate_seconds']:.1f} s ({result['evaluate_mb_per_s']} MB/s)")


if __name__ == "__main__":
    main()
