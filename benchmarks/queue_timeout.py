"""Service time apart from queue time (issue 40, item 4): kitab answer's chat session against a
one-at-a-time server (the loopback endpoint in ``serial`` mode, as ``llama_cpp.server`` computes:
one answer at a time, in arrival order, and an answer whose client hung up still computed).

Counts, for N queries at concurrency C with a timeout T below C x slow: the requests sent, the
answers the server computed for nobody (``wasted``), the queries answered, and the seconds
recorded per answer (``seconds``: service; ``queued_seconds``: the rest of each query's time).

    .venv/bin/python -m benchmarks.queue_timeout --queries 12 --slow 0.3 --timeout 0.7
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from kitab.core.params import ModelEndpoint
from kitab.core.policy import ChatPolicy, RetryPolicy
from kitab.release.answer import Prompt, answer_prompts
from kitab.simulate.chat import ChatServer
from kitab.sources.chat import Params


def run(queries: int, slow: float, timeout: float, concurrency: int, serial: bool = True) -> dict:
    from kitab.sources.chat_session import open_chat_session

    prompts = [Prompt(f"q{i:03d}", "no-context", f"List the books of author {i}.") for i in range(queries)]
    with tempfile.TemporaryDirectory() as tmp, ChatServer(slow=slow, serial=serial) as server:
        policy = ChatPolicy(retry=RetryPolicy(), timeout=timeout, concurrency=concurrency)
        started = time.monotonic()
        with open_chat_session(ModelEndpoint(server.url, "m", str(Path(tmp) / "c.sqlite")), policy) as chat:
            results, stats = answer_prompts(prompts, session=chat, params=Params())
        wall = time.monotonic() - started
        time.sleep(slow * concurrency + 0.5)  # the server finishes what it queued
        seconds = [r["seconds"] for r in results.values()]
        queued = [r.get("queued_seconds") or 0.0 for r in results.values()]
        return {
            "queries": queries,
            "slow": slow,
            "timeout": timeout,
            "concurrency": concurrency,
            "serial": serial,
            "answered": len(results),
            "failed": len(stats.failed),
            "requests": stats.requests,
            "computed": server.computed,
            "wasted": server.wasted,
            "seconds_median": round(statistics.median(seconds), 3) if seconds else None,
            "seconds_max": round(max(seconds), 3) if seconds else None,
            "queued_seconds_sum": round(sum(queued), 3),
            "wall": round(wall, 2),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=12)
    parser.add_argument("--slow", type=float, default=0.3)
    parser.add_argument("--timeout", type=float, default=0.7)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--parallel", action="store_true", help="a server that computes side by side")
    args = parser.parse_args()
    print(json.dumps(run(args.queries, args.slow, args.timeout, args.concurrency, not args.parallel)))


if __name__ == "__main__":
    main()
