"""Models on a release: ``kitab evaluate`` (score answers), ``kitab answer`` (ask a model
through an OpenAI-compatible endpoint), ``kitab prompts`` (the paper's prompts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from kitab.app.commands.common import WarehouseOpt, check_report_output, existing_warehouse, user_errors, warn
from kitab.core.errors import BadValue
from kitab.core.outputs import check_cache, check_file
from kitab.core.policy import DEFAULT_TEMPERATURE, NO_TEMPERATURE, ChatPolicy, RetryPolicy, temperature_value
from kitab.release.task import task, task_help, task_names, template_help

CHAT = ChatPolicy()  # kitab answer's defaults: the chat policy's (the model taggers use the same)
FAILED_SHOWN = 10  # failed queries listed on the terminal (all of them: --output json, the failed file)

app = typer.Typer()
TaskOpt = typer.Option(task_names()[0], help=task_help())


def chosen_task(name: str):
    """``--task``: the registered evaluation task of that name (kitab/release/task.py)."""
    try:
        return task(name)
    except BadValue as exc:
        raise typer.BadParameter(str(exc)) from None


def print_result(chosen, result: dict, output: str) -> None:
    """An evaluation's result: the task's markdown, or the whole result as JSON."""
    if output == "json":
        print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
    else:
        print(chosen.format_result(result))


@app.command()
def evaluate(
    release: str = typer.Option(..., help="release id whose queries were answered"),
    answers: Path = typer.Option(
        ..., help="JSON lines {query_id, response}, or a CSV with KITAB's columns and the model's text"
    ),
    model: str | None = typer.Option(
        None,
        help="the model's name (default: the model the answers name, as kitab answer writes it, else the file's name)",
    ),
    response_column: str | None = typer.Option(
        None, help="CSV: the column with the model's text (default: the one column that is not KITAB's)"
    ),
    output: str = typer.Option(
        "markdown", help="markdown | json (the leaderboard entry, coverage and every aggregate)"
    ),
    over: str | None = typer.Option(
        None,
        help="what to score over: release (every query) | sample (the file's --limit sample) | answered "
        "(only the queries the file answers); default: the file's sample when its lines name a --limit, "
        "else the release",
    ),
    task: str = TaskOpt,
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Score a model's answers with KITAB's metrics (a query without an answer is wrong in
    completeness and all-correct);
    store them in the table `evaluations` and print this evaluation's leaderboard. With
    --task claims: the claim pairs' verdicts, scored as pair accuracy (table claim_evaluations)."""
    check_report_output(output)
    chosen = chosen_task(task)
    with user_errors():
        result = chosen.evaluate(
            existing_warehouse(warehouse, release),
            release,
            answers,
            model=model,
            response_column=response_column,
            over=over,
        )
    print_result(chosen, result, output)
    warn_reasoning_only(result.get("reasoning_only"))


def warn_reasoning_only(count: int | None) -> None:
    """One warning for answers that were all reasoning (rc stays 0: they are abstentions)."""
    if count:
        warn(
            f"{count} answers are reasoning only, no content (flagged reasoning_only; scored as abstentions): "
            f"raise --max-tokens or --max-completion-tokens, or check the server's reasoning parser"
        )


@app.command()
def answer(
    release: str = typer.Option(..., help="release id whose queries to ask"),
    model: str = typer.Option(..., help='the model name the endpoint serves (sent as "model")'),
    base_url: str = typer.Option(
        ...,
        envvar="OPENAI_BASE_URL",
        help="the OpenAI-compatible API root, e.g. https://api.openai.com/v1, "
        "http://127.0.0.1:8000/v1 (vLLM), http://127.0.0.1:11434/v1 (Ollama)",
    ),
    out: Path = typer.Option(..., help="the answers file to write (JSON lines, what kitab evaluate reads)"),
    template: str | None = typer.Option(None, help=template_help()),
    concurrency: int = typer.Option(CHAT.concurrency, min=1, max=256, help="requests in flight at most"),
    rate: float | None = typer.Option(None, help="requests started per second at most (default: no cap)"),
    max_tokens: int | None = typer.Option(
        None, min=0, help="default: the task's for the template (queries: the paper's 400 / 1000 / 3000); 0: not sent"
    ),
    max_completion_tokens: int | None = typer.Option(
        None, min=1, help="sent instead of max_tokens (OpenAI's reasoning models require it)"
    ),
    temperature: str = typer.Option(
        f"{DEFAULT_TEMPERATURE:g}",
        help=f"sent with every query (the paper's is 0); {NO_TEMPERATURE!r}: none sent (reasoning models refuse one)",
    ),
    top_p: float | None = typer.Option(None, min=0.0, max=1.0, help="sent only when given"),
    seed: int | None = typer.Option(None, help="sent as the request's seed, where the server takes one"),
    system: str | None = typer.Option(None, "--system", help="a system prompt sent before every query"),
    samples: int = typer.Option(1, min=1, max=100, help="ask each query N times; each sample is scored"),
    timeout: float = typer.Option(CHAT.timeout, min=1.0, help="seconds to wait for one answer"),
    max_attempts: int = typer.Option(
        CHAT.retry.max_attempts, min=1, max=20, help="tries per query (429, 5xx, timeouts)"
    ),
    max_retry_after: float = typer.Option(
        CHAT.retry.max_retry_after, min=0.0, help="a Retry-After longer than this fails the query instead of waiting"
    ),
    cache: Path | None = typer.Option(None, help="the response cache (default: <warehouse>/.cache/answers.sqlite)"),
    limit: int | None = typer.Option(
        None, min=1, help="only N queries, a seeded sample across authors (a trial run; not the most-linked first)"
    ),
    limit_seed: int = typer.Option(0, help="the seed of --limit's sample"),
    allow_missing: bool = typer.Option(
        False,
        "--allow-missing",
        help="write the answers there are even if some queries failed (kitab evaluate scores those wrong)",
    ),
    evaluate_after: bool = typer.Option(False, "--evaluate", help="score the answers file right after"),
    output: str = typer.Option(
        "markdown", help="markdown | json (the run's summary, every failed query named; with --evaluate, the scores)"
    ),
    task: str = TaskOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display"),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Ask a model every query of a release through an OpenAI-compatible chat endpoint (key from
    OPENAI_API_KEY, never logged or written) and write the answers file; cached, resumable."""
    from kitab.app.progress_display import AnswerProgress
    from kitab.release.answer import Params, answer_release, failed_path

    check_report_output(output)
    chosen = chosen_task(task)
    with user_errors():
        template = chosen.template(template)
    root = existing_warehouse(warehouse, release)
    # the output-path rule (kitab/core/outputs.py): not in a warehouse, not the cache it reads
    with user_errors():
        check_file(out, "--out", [root] if cache is None else [root, cache])
        check_file(failed_path(out), "--out's failed list", [root, out] if cache is None else [root, out, cache])
        if cache is not None:
            check_cache(cache, "--cache", [out, failed_path(out)])
        sent_temperature = temperature_value(temperature)
    if max_tokens is None and max_completion_tokens is None:
        max_tokens = chosen.max_tokens.get(template)
    params = Params(
        temperature=sent_temperature,
        max_tokens=max_tokens or None,
        seed=seed,
        max_completion_tokens=max_completion_tokens,
        top_p=top_p,
    )
    progress = AnswerProgress(quiet)
    seen: list = [None]

    def on_progress(stats) -> None:
        seen[0] = stats
        progress(stats)

    with user_errors():
        ended = False
        try:
            summary = answer_release(
                root,
                release,
                model=model,
                base_url=base_url,
                out=out,
                template=template,
                task=chosen.name,
                policy=ChatPolicy(
                    retry=RetryPolicy(max_attempts=max_attempts, max_retry_after=max_retry_after),
                    timeout=timeout,
                    concurrency=concurrency,
                    rate=rate,
                ),
                params=params,
                cache_path=cache,
                allow_missing=allow_missing,
                limit=limit,
                limit_seed=limit_seed,
                on_progress=on_progress,
                system=system,
                samples=samples,
            )
            ended = True
        finally:
            progress.end(seen[0], ended)
    print_answer_summary(summary, output)
    if output == "json" and not evaluate_after:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
    if evaluate_after:
        with user_errors():
            result = chosen.evaluate(root, release, out, model=model)
        result["answer_run"] = summary
        print_result(chosen, result, output)
    warn_reasoning_only(summary["reasoning_only"])  # the last line, after the scores


def print_answer_summary(summary: dict, output: str) -> None:
    """kitab answer's summary: what was answered and what it cost, then each failed query (at
    most FAILED_SHOWN; all of them in the failed file and in --output json)."""
    from kitab.release.answer import failed_lines

    failed = f", {len(summary['failed'])} failed (left out)" if summary["failed"] else ""
    if summary["cut"]:
        failed += f", {summary['cut']} cut at the token limit (finish_reason length)"
    lowered = ""
    if summary["concurrency_lowest"] < summary["concurrency"]:
        lowered = f"; concurrency lowered to {summary['concurrency_lowest']} after timeouts"
    stream = sys.stderr if output == "json" else sys.stdout
    print(
        f"{summary['answered']} of {summary['queries']} queries answered by {summary['model']} ({summary['from_cache']} "
        f"from the cache, {summary['requests']} requests, {summary['retries']} retries{failed}), "
        f"{summary['prompt_tokens']:,} prompt + {summary['completion_tokens']:,} completion tokens, "
        f"{summary['service_seconds']:.1f} s service + {summary['queued_seconds']:.1f} s queued over the answers, "
        f"{summary['seconds']:.1f} s wall{lowered} -> {summary['out']}",
        file=stream,
    )
    if summary["failed"]:
        print(f"failed queries (all in {summary['failed_file']}):", file=stream)
        for line in failed_lines(summary["failed"], FAILED_SHOWN):
            print(f"  {line}", file=stream)


@app.command()
def prompts(
    release: str = typer.Option(..., help="release id"),
    template: str | None = typer.Option(
        None, help=template_help() + "; queries: the paper's Templates 2a, 2b, 3, cot = 2a"
    ),
    limit: int | None = typer.Option(None, min=1, help="only N queries, a seeded sample across authors"),
    limit_seed: int = typer.Option(0, help="the seed of --limit's sample"),
    task: str = TaskOpt,
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """The paper's prompt for every query of a release, as JSON lines {query_id, template, prompt};
    with --task claims, the claim template for every claim (--limit: pairs)."""
    chosen = chosen_task(task)
    with user_errors():
        template = chosen.template(template)
        for line in chosen.prompts(
            existing_warehouse(warehouse, release), release, template, limit=limit, seed=limit_seed
        ):
            print(line)
