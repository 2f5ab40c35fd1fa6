"""docker-compose.yml's topology as plain processes: a Prefect server, the mirror of a
snapshot, a worker, and the work pool and ``scheduled-refresh`` deployment registered from
prefect.yaml the way the compose worker does it. The database is a URL: Postgres in
scripts/stack (the compose database, from the OS packages), SQLite in tests/test_server.py.

Every process starts in its own session, with its pid and start time in the state folder,
so ``down`` works from another invocation, never signals a reused pid, and takes each
process's descendants with it (the worker's flow-run processes and their pools).

    python -m kitab.app.stack up --state DIR --database-url URL [--api-port N --mirror-port N]
    python -m kitab.app.stack run --state DIR [--param seed=7] [--now]  # one run of the deployment
    python -m kitab.app.stack status|down --state DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from kitab.app.processes import Service, StackError, api, port_open
from kitab.core.env import BUNDLED_SNAPSHOT, PROJECT_ROOT

BIN = Path(sys.executable).parent  # the `prefect` and `kitab` commands of this environment
TERMINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


def deployment_spec() -> dict:
    """The one deployment of prefect.yaml: what `prefect deploy --all` registers in compose."""
    deployments = yaml.safe_load((PROJECT_ROOT / "prefect.yaml").read_text())["deployments"]
    if len(deployments) != 1:
        raise StackError(f"prefect.yaml defines {len(deployments)} deployments; the stack runs exactly one")
    return deployments[0]


@dataclass
class Stack:
    """The compose services as processes; its settings are saved in ``state`` at ``up``."""

    state: Path
    warehouse: Path
    database_url: str  # sqlite+aiosqlite:///… or postgresql+asyncpg://…
    api_port: int = 4200
    mirror_port: int = 8089
    snapshot: Path = BUNDLED_SNAPSHOT
    ui: bool = False
    # how often the worker asks for runs, the server's scheduler looks for schedules to
    # fill, and a run queued behind the deployment's concurrency limit asks again
    # (Prefect's defaults: 10 s, 60 s, 30 s)
    poll_seconds: float = 5.0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}/api"

    @property
    def mirror_url(self) -> str:
        return f"http://127.0.0.1:{self.mirror_port}"

    @property
    def pool(self) -> str:
        return deployment_spec()["work_pool"]["name"]

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
        env.update(
            DO_NOT_TRACK="1",
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
            PREFECT_LOGGING_LEVEL="INFO",
            PREFECT_UI_ENABLED=str(self.ui).lower(),
        )
        env.update(extra)
        return env

    def client_env(self) -> dict[str, str]:
        """What the compose worker container has: the API, the warehouse, Prefect's home in it."""
        return self.env(
            PREFECT_API_URL=self.api_url,
            KITAB_WAREHOUSE=str(self.warehouse),
            PREFECT_HOME=str(self.warehouse / ".prefect"),
            PREFECT_WORKER_QUERY_SECONDS=str(self.poll_seconds),
        )

    def services(self) -> dict[str, Service]:
        server = Service(
            "prefect-server",
            [
                str(BIN / "prefect"),
                "server",
                "start",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.api_port),
                "--ui" if self.ui else "--no-ui",
            ],
            self.env(
                PREFECT_HOME=str(self.state / "prefect-server"),
                PREFECT_API_DATABASE_CONNECTION_URL=self.database_url,
                PREFECT_UI_API_URL=self.api_url,
                PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS=str(self.poll_seconds),
                PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS=str(self.poll_seconds),
            ),
            self.state,
        )
        mirror = Service(
            "mirror",
            [str(BIN / "kitab"), "mirror", "serve", "--snapshot", str(self.snapshot), "--port", str(self.mirror_port)],
            self.env(),
            self.state,
        )
        worker = Service(
            "worker", [str(BIN / "prefect"), "worker", "start", "--pool", self.pool], self.client_env(), self.state
        )
        return {s.name: s for s in (server, mirror, worker)}

    # -- lifecycle ------------------------------------------------------------------------
    def up(self, timeout: float = 180) -> str:
        """Start server and mirror, register pool and deployment, start the worker; returns
        the deployment id. On any failure everything started so far is stopped."""
        self.state.mkdir(parents=True, exist_ok=True)
        self.warehouse.mkdir(parents=True, exist_ok=True)
        (self.warehouse / ".prefect").mkdir(exist_ok=True)
        (self.state / "prefect-server").mkdir(exist_ok=True)
        for port in (self.api_port, self.mirror_port):
            if port_open(port):
                raise StackError(f"port {port} on 127.0.0.1 is in use")
        self.save()
        services = self.services()
        try:
            services["prefect-server"].start()
            services["mirror"].start()
            self._wait(lambda: self._healthy(), services["prefect-server"], timeout, "the Prefect API")
            self._wait(lambda: port_open(self.mirror_port), services["mirror"], timeout, "the mirror")
            deployment_id = self.register()
            services["worker"].start()
            return deployment_id
        except BaseException:
            self.down()
            raise

    def register(self) -> str:
        """The compose worker's first two commands: the process work pool, then
        `prefect deploy` of prefect.yaml's deployment, its mirror URL pointed at our mirror."""
        spec = deployment_spec()
        self._cli(["work-pool", "create", self.pool, "--type", "process", "--overwrite"])
        deploy = ["--no-prompt", "deploy", "--name", spec["name"]]
        if "mirror_url" in spec.get("parameters", {}):  # compose's `mirror` service is here
            deploy += ["--param", f"mirror_url={self.mirror_url}"]
        self._cli(deploy)
        return self.deployment()["id"]

    def deployment(self) -> dict:
        found = api(
            self.api_url, "/deployments/filter", {"deployments": {"name": {"any_": [deployment_spec()["name"]]}}}
        )
        if len(found) != 1:
            raise StackError(f"expected one deployment {deployment_spec()['name']!r}, the API has {len(found)}")
        return found[0]

    def down(self) -> list[int]:
        """Stop worker, mirror, server (in that order: the worker reports to the server on
        its way out). Returns pids that survived SIGKILL (empty: none)."""
        left: list[int] = []
        for service in reversed(list(self.services().values())):
            left += service.stop()
        return left

    def status(self) -> dict[str, int | None]:
        return {name: (p.pid if (p := s.process()) else None) for name, s in self.services().items()}

    # -- runs -----------------------------------------------------------------------------
    def upcoming(self, timeout: float = 60) -> list[datetime]:
        """Start times of the runs the server's scheduler made from the deployment's schedules
        (it keeps a few ahead). Waits for them: none means the scheduler is not working."""
        deployment_id = self.deployment()["id"]
        deadline = time.monotonic() + timeout
        while True:
            runs = api(
                self.api_url,
                "/flow_runs/filter",
                {
                    "deployments": {"id": {"any_": [deployment_id]}},
                    "flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}}},
                    "sort": "EXPECTED_START_TIME_ASC",
                    "limit": 20,
                },
            )
            times = [datetime.fromisoformat(r["expected_start_time"]) for r in runs if r["auto_scheduled"]]
            if times:
                return times
            if time.monotonic() > deadline:
                raise StackError(
                    f"the server's scheduler made no runs of the deployment's schedule in "
                    f"{timeout:.0f} s; server log:\n{self.services()['prefect-server'].tail()}"
                )
            time.sleep(1.0)

    def schedule_run(self, parameters: dict | None = None, delay: float = 10, timeout: float = 120) -> str:
        """One run made by the server's scheduler, the way the cron schedule makes them: a
        schedule due in ``delay`` seconds, with ``parameters`` over the deployment's, removed
        again once the worker has taken its run. Returns the run's id."""
        deployment_id = self.deployment()["id"]
        due = datetime.now(UTC) + timedelta(seconds=delay)
        (schedule,) = api(
            self.api_url,
            f"/deployments/{deployment_id}/schedules",
            [
                {
                    "schedule": {"interval": 366 * 86400, "anchor_date": due.isoformat(), "timezone": "UTC"},
                    "active": True,
                    "max_scheduled_runs": 1,
                    "parameters": parameters or {},
                }
            ],
        )
        key = f"scheduled {deployment_id} {schedule['id']} "
        deadline = time.monotonic() + delay + timeout
        while True:
            runs = api(
                self.api_url,
                "/flow_runs/filter",
                {"deployments": {"id": {"any_": [deployment_id]}}, "sort": "EXPECTED_START_TIME_ASC", "limit": 200},
            )
            mine = [r for r in runs if (r.get("idempotency_key") or "").startswith(key)]
            # Scheduled or Late: not taken yet (removing the schedule now would delete the run)
            if mine and mine[0]["state"]["name"] not in ("Scheduled", "Late"):
                break
            if time.monotonic() > deadline:
                state = mine[0]["state"]["name"] if mine else "not created"
                raise StackError(
                    f"the scheduled run was not taken in {delay + timeout:.0f} s ({state}); "
                    f"server log:\n{self.services()['prefect-server'].tail()}"
                )
            time.sleep(1.0)
        api(self.api_url, f"/deployments/{deployment_id}/schedules/{schedule['id']}", method="DELETE")
        return mine[0]["id"]

    def trigger(self, parameters: dict | None = None) -> str:
        """One run of the deployment now (what `prefect deployment run` does); returns its id.
        ``parameters`` override the deployment's for this run only."""
        run = api(
            self.api_url, f"/deployments/{self.deployment()['id']}/create_flow_run", {"parameters": parameters or {}}
        )
        return run["id"]

    def wait(self, run_ids: list[str], timeout: float = 600) -> list[dict]:
        """The flow runs once each is in a terminal state (Completed, Failed, Crashed,
        Cancelled); fails early if a stack process stops."""
        services = self.services()
        deadline = time.monotonic() + timeout
        while True:
            runs = [api(self.api_url, f"/flow_runs/{run_id}") for run_id in run_ids]
            if all(r["state"]["type"] in TERMINAL for r in runs):
                return runs
            for service in services.values():
                if service.process() is None:
                    raise StackError(f"{service.name} stopped while runs were pending; its log:\n{service.tail()}")
            if time.monotonic() > deadline:
                states = ", ".join(f"{r['name']}: {r['state']['name']}" for r in runs)
                raise StackError(
                    f"runs not finished after {timeout:.0f} s ({states}); worker log:\n{services['worker'].tail()}"
                )
            time.sleep(1.0)

    def logs(self, run_id: str, limit: int = 200) -> list[str]:
        """A flow run's log lines as the server stored them (what the UI shows)."""
        rows = api(
            self.api_url,
            "/logs/filter",
            {"logs": {"flow_run_id": {"any_": [run_id]}}, "sort": "TIMESTAMP_ASC", "limit": limit},
        )
        tasks = {
            t["id"]: t["name"]
            for t in api(self.api_url, "/task_runs/filter", {"flow_runs": {"id": {"any_": [run_id]}}})
        }
        return [
            f"{r['timestamp'][11:19]} {tasks[r['task_run_id']] + ': ' if r.get('task_run_id') in tasks else ''}"
            f"{r['message']}"
            for r in rows
        ]

    # -- helpers --------------------------------------------------------------------------
    def save(self) -> None:
        record = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
        (self.state / "stack.json").write_text(json.dumps(record, indent=2))

    @classmethod
    def load(cls, state: Path) -> Stack:
        try:
            record = json.loads((Path(state) / "stack.json").read_text())
        except FileNotFoundError:
            raise StackError(f"no stack in {state} (start one with `up`)") from None
        for key in ("state", "warehouse", "snapshot"):
            record[key] = Path(record[key])
        return cls(**record)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.api_url + "/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def _wait(self, ready, service: Service, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if service.process() is None:
                raise StackError(f"{service.name} exited before {what} was ready; its log:\n{service.tail()}")
            if time.monotonic() > deadline:
                raise StackError(f"{what} not ready after {timeout:.0f} s; {service.name} log:\n{service.tail()}")
            time.sleep(0.5)

    def _cli(self, args: list[str]) -> None:
        done = subprocess.run(
            [str(BIN / "prefect"), *args],
            env=self.client_env(),
            cwd=PROJECT_ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        with open(self.state / "register.log", "a") as log:
            log.write(f"$ prefect {' '.join(args)}\n{done.stdout}{done.stderr}\n")
        if done.returncode != 0:
            raise StackError(f"prefect {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def run_summary(run: dict) -> str:
    """One line per run: name, state, parameters, duration."""
    seconds = run.get("total_run_time") or 0
    return (
        f"flow run {run['name']} ({run['id']}): {run['state']['name']} in {seconds:.0f} s, "
        f"parameters {json.dumps(run['parameters'], sort_keys=True)}"
    )


def committed(warehouse: Path) -> str:
    """The warehouse's releases, newest first, with their author counts."""
    from kitab.core.warehouse import Warehouse

    wh = Warehouse(warehouse)
    if not wh.committed_releases():
        return f"warehouse {warehouse}: no committed release"
    with wh.connect() as con:
        rows = con.execute(
            "select r.release, count(a.qid) from releases r left join released_authors a "
            "using (release) group by r.release, r.created_at order by r.created_at desc"
        ).fetchall()
    return f"warehouse {warehouse}: " + ", ".join(f"release {r} ({n} authors)" for r, n in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kitab.app.stack", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["up", "run", "status", "down"])
    parser.add_argument("--state", type=Path, required=True, help="pid files, logs, stack.json")
    parser.add_argument("--warehouse", type=Path, help="up: the worker's warehouse (default STATE/warehouse)")
    parser.add_argument("--database-url", help="up: the Prefect server's database")
    parser.add_argument("--api-port", type=int, default=4200)
    parser.add_argument("--mirror-port", type=int, default=8089)
    parser.add_argument("--ui", action="store_true", help="up: serve the Prefect UI on the API port")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="run: a parameter for this run only (value parsed as JSON, else a string)",
    )
    parser.add_argument(
        "--now",
        action="store_true",
        help="run: create the run directly (`prefect deployment run`), not through the scheduler",
    )
    parser.add_argument("--timeout", type=float, default=1800, help="run: seconds to wait for the run")
    args = parser.parse_args(argv)
    state = args.state.resolve()
    try:
        if args.command == "up":
            if not args.database_url:
                parser.error("up needs --database-url")
            stack = Stack(
                state=state,
                warehouse=(args.warehouse or state / "warehouse").resolve(),
                database_url=args.database_url,
                api_port=args.api_port,
                mirror_port=args.mirror_port,
                ui=args.ui,
            )
            deployment_id = stack.up()
            print(
                f"Prefect API {stack.api_url} (database {stack.database_url.split('@')[-1]}), "
                f"mirror {stack.mirror_url}, worker on pool {stack.pool!r}, deployment {deployment_id}"
            )
            try:
                upcoming = stack.upcoming()
            except StackError:
                stack.down()  # a server whose scheduler makes no runs is no scheduled refresh
                raise
            print("scheduled by the server: " + ", ".join(f"{t:%a %Y-%m-%d %H:%M} UTC" for t in upcoming[:3]))
            print(f"logs and pid files: {state}; warehouse: {stack.warehouse}")
            return 0
        stack = Stack.load(state)
        if args.command == "status":
            for name, pid in stack.status().items():
                print(f"{name:15} {'pid ' + str(pid) if pid else 'stopped'}")
            return 0 if all(stack.status().values()) else 3
        if args.command == "down":
            left = stack.down()
            print("stopped" if not left else f"still alive after SIGKILL: {left}")
            return 0 if not left else 1
        parameters = dict(_param(p) for p in args.param)
        started = datetime.now().astimezone()
        if args.now:
            run_id = stack.trigger(parameters)
            print(f"{started:%H:%M:%S} triggered a run of {stack.deployment()['name']} ({run_id}); waiting")
        else:
            print(f"{started:%H:%M:%S} scheduling a run of {stack.deployment()['name']} in 10 s")
            run_id = stack.schedule_run(parameters)
            print(f"{datetime.now():%H:%M:%S} the scheduler made run {run_id} and the worker took it; waiting")
        (run,) = stack.wait([run_id], timeout=args.timeout)
        print(run_summary(run))
        for line in stack.logs(run_id):
            print("  " + line)
        print(committed(stack.warehouse))
        return 0 if run["state"]["type"] == "COMPLETED" else 1
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _param(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep:
        raise StackError(f"--param wants KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


if __name__ == "__main__":
    sys.exit(main())
