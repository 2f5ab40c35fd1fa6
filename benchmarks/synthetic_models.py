"""The leaderboard of three synthetic models on a release, through the whole loop: ``kitab
answer`` against a loopback OpenAI-compatible endpoint (kitab/simulate/chat.py), then ``kitab
evaluate``.

- **perfect** answers every query with its exported ``mapped_books`` (Template 2a's format);
- **half** is perfect's answers file with every second line dropped (half the queries
  unanswered);
- **fixed-wrong** answers every query with the same title, by no author of the release.

It also asks perfect's questions a second time and reports the requests sent (0: the cache).

    .venv/bin/python benchmarks/synthetic_models.py --warehouse warehouse --release demo [--json]

``--task claims``: the claim pairs (docs/claims.md) instead, through ``kitab answer --task
claims`` and ``kitab evaluate --task claims``: **perfect** (each claim's label), **always-true**,
**random** (a seeded coin per claim) and **refusal** ("I cannot say.").
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import argparse  # noqa: E402
import ast  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from kitab.core.policy import ChatPolicy  # noqa: E402
from kitab.core.warehouse import Warehouse  # noqa: E402
from kitab.release.answer import answer_release, release_prompt_list  # noqa: E402
from kitab.release.evaluation.run import evaluate_release  # noqa: E402
from kitab.release.leaderboard import format_leaderboard, leaderboard  # noqa: E402
from kitab.simulate.chat import ChatServer  # noqa: E402

FIXED_WRONG = "Output:\n1. Reason: It is a famous book. Title: Zqxv Wjkp Yfgh\n"


def template_answer(titles: list[str]) -> str:
    lines = "".join(f"{n}. Reason: It satisfies the criteria. Title: {t}\n" for n, t in enumerate(titles, 1))
    return f"Let me think step by step.\n\nOutput:\n{lines}"


def claims_main(warehouse: Path, release: str, concurrency: int, as_json: bool, seed: int = 7) -> None:
    import hashlib

    from kitab.release.claims import claim_entries, evaluate_claims, format_claim_entries, render_claim_prompt

    with Warehouse(warehouse).connect(release=release) as con:
        labels = dict(con.execute("SELECT claim, label FROM claims").fetchall())
    truth = {render_claim_prompt(claim): label for claim, label in labels.items()}

    def coin(prompt: str) -> bool:
        return hashlib.sha256(f"{seed}:{prompt}".encode()).digest()[0] % 2 == 0

    models = {
        "perfect": lambda p: f"{truth[p]}\nThe release's tables say so.",
        "always-true": lambda p: "True",
        "random": lambda p: str(coin(p)),
        "refusal": lambda p: "I cannot say.",
    }
    results = {}
    with tempfile.TemporaryDirectory(prefix="kitab-synthetic-claims-") as tmp:
        for name, answer in models.items():
            with ChatServer(answer) as server:
                answer_release(
                    warehouse,
                    release,
                    model=name,
                    base_url=server.url,
                    out=Path(tmp) / f"{name}.jsonl",
                    task="claims",
                    cache_path=Path(tmp) / "answers.sqlite",
                    policy=ChatPolicy(concurrency=concurrency),
                )
            results[name] = evaluate_claims(warehouse, release, Path(tmp) / f"{name}.jsonl", model=name)
    keys = {(r["model"], r["answers_sha256"]) for r in results.values()}
    with Warehouse(warehouse).connect(release=release) as con:
        entries = [e for e in claim_entries(con) if (e["model"], e["answers_sha256"]) in keys]
    for rank, e in enumerate(entries, 1):
        e["rank"] = rank
    if as_json:
        print(json.dumps({"pair_accuracy": entries}, indent=2, default=str))
        return
    print(f"release {release}: {results['perfect']['claims']} claims\n")
    print(format_claim_entries(entries))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warehouse", type=Path, default=Path("warehouse"))
    parser.add_argument("--release", required=True)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--task", choices=("queries", "claims"), default="queries")
    args = parser.parse_args(argv)
    warehouse = args.warehouse.resolve()
    if args.task == "claims":
        claims_main(warehouse, args.release, args.concurrency, args.json)
        return
    with Warehouse(warehouse).connect(release=args.release) as con:
        mapped = dict(con.execute("SELECT query_id, mapped_books FROM kitab_book_constraints").fetchall())
    prompts = release_prompt_list(warehouse, args.release, "no-context")
    by_prompt = {p.text: template_answer(ast.literal_eval(mapped[p.query_id])) for p in prompts}
    runs = {}
    with tempfile.TemporaryDirectory(prefix="kitab-synthetic-") as tmp:
        tmp = Path(tmp)
        cache = tmp / "answers.sqlite"
        with ChatServer(lambda prompt: by_prompt[prompt]) as server:
            started = time.monotonic()
            runs["perfect"] = answer_release(
                warehouse,
                args.release,
                model="perfect",
                base_url=server.url,
                out=tmp / "perfect.jsonl",
                cache_path=cache,
                policy=ChatPolicy(concurrency=args.concurrency),
            )
            runs["perfect"]["wall"] = time.monotonic() - started
            runs["perfect (rerun)"] = answer_release(
                warehouse,
                args.release,
                model="perfect",
                base_url=server.url,
                out=tmp / "perfect-again.jsonl",
                cache_path=cache,
            )
            sent = len(server.chat_requests)
        same = (tmp / "perfect.jsonl").read_bytes() == (tmp / "perfect-again.jsonl").read_bytes()
        lines = (tmp / "perfect.jsonl").read_text(encoding="utf-8").split("\n")[:-1]  # JSON Lines: by "\n" only
        (tmp / "half.jsonl").write_text("".join(line + "\n" for line in lines[::2]), encoding="utf-8")
        with ChatServer(lambda prompt: FIXED_WRONG) as server:
            runs["fixed-wrong"] = answer_release(
                warehouse,
                args.release,
                model="fixed-wrong",
                base_url=server.url,
                out=tmp / "fixed-wrong.jsonl",
                cache_path=cache,
                policy=ChatPolicy(concurrency=args.concurrency),
            )
        results = {
            model: evaluate_release(warehouse, args.release, tmp / f"{model}.jsonl", model=model)
            for model in ("perfect", "half", "fixed-wrong")
        }
    with Warehouse(warehouse).connect(release=args.release) as con:
        board = leaderboard(con, args.release)
    keys = {(r["model"], r["answers_sha256"]) for r in results.values()}
    board["evaluations"] = [e for e in board["evaluations"] if (e["model"], e["answers_sha256"]) in keys]
    for rank, e in enumerate(board["evaluations"], 1):
        e["rank"] = rank
    if args.json:
        print(json.dumps({"runs": runs, "leaderboard": board}, indent=2, default=str))
        return
    print(
        f"release {args.release}: {len(prompts)} queries, loopback endpoint {sent} requests for perfect "
        f"(first run {runs['perfect']['requests']} in {runs['perfect']['wall']:.1f} s, rerun "
        f"{runs['perfect (rerun)']['requests']}; rerun answers file byte-identical: {same}), "
        f"{runs['fixed-wrong']['requests']} for fixed-wrong\n"
    )
    print(format_leaderboard(board))


if __name__ == "__main__":
    main()
