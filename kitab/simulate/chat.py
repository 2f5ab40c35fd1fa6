"""A loopback OpenAI-compatible chat endpoint, the model side of ``kitab answer`` for tests and
benchmarks (as the mirror is the sources' side): ``POST /v1/chat/completions`` on 127.0.0.1,
answering each prompt with ``answer(prompt)`` (deterministic), and faults on demand:

- ``throttle(n, retry_after)``: the next ``n`` requests get 429 with ``Retry-After``;
- ``fail(n, status, unique=False)``: the next ``n`` requests get ``status`` (500 by default)
  with an OpenAI-style error body; ``unique``: each message carries its own request id,
  uuid and counter, as gateways write them (the same error, never the same text);
- ``slow``: seconds to sleep before every answer;
- ``serial``: one answer computed at a time, in arrival order, as ``llama_cpp.server`` (and
  Ollama with one slot) does: a request waits in the server's queue behind the others, and one
  whose client hung up (its timeout) is still computed (``wasted`` counts those answers nobody
  read; ``computed`` counts every answer);
- ``hostile(kind, n)``: the next ``n`` requests get a hostile answer (:data:`HOSTILE`):
  ``hang`` (no headers, ever), ``endless`` (a 200 whose body trickles forever),
  ``gzip_bomb`` (a 1 MB gzip body inflating to 1 GiB), ``deep_json`` (200,000-deep nesting),
  ``huge_tokens`` (a token count of 10^26), ``surrogate`` (a lone surrogate in the text),
  ``echo_key`` (a 400 whose message echoes the key across its 160th character);
- ``answer`` may return a dict (``content``, ``finish_reason``, ``reasoning_content`` or
  ``reasoning``): :func:`thinker` answers with reasoning only, as a reasoning model whose
  server puts the whole reply in the reasoning field (or in a ``<think>`` block);
- ``key``: the key it expects (``Authorization: Bearer`` or Azure's ``api-key``); another one
  gets 401 with OpenAI's message, which names part of the key.

Every request is recorded (time, path, prompt, status sent, whether the key matched), so a test
can count what a client really sent. Used as a context manager; at its end the port is closed
and so is every connection a client kept alive (the next request is refused, as from a server
that went away)."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Seen:
    at: float
    path: str
    prompt: str | None
    status: int
    key_ok: bool
    body: dict


HOSTILE = ("hang", "endless", "gzip_bomb", "deep_json", "huge_tokens", "surrogate", "echo_key")


def echo(prompt: str) -> str:
    return f"Output:\n1. Reason: it fits. Title: {prompt[:20]}\n"


THINKING = ("reasoning_content", "reasoning", "think")  # where a reasoning-only reply puts its text


def thinker(where: str = "reasoning_content") -> Callable[[str], dict]:
    """An answer with no content but reasoning: in ``reasoning_content`` (vLLM, DeepSeek), in
    ``reasoning`` (OpenRouter, newer vLLM), or as a content that is only a ``<think>`` block."""
    if where not in THINKING:
        raise ValueError(f"thinker where={where!r}: expected one of {THINKING}")
    thought = "The user wants books. Title: Beloved might fit; I should list it after checking."

    def answer(prompt: str) -> dict:
        if where == "think":
            return {"content": f"<think>{thought}</think>\n", "finish_reason": "stop"}
        return {"content": "", where: thought, "finish_reason": "stop"}

    return answer


class ChatServer:
    def __init__(
        self,
        answer: Callable[[str], str] = echo,
        *,
        key: str | None = None,
        slow: float = 0.0,
        serial: bool = False,
        port: int = 0,
    ):
        self.answer, self.key, self.slow, self.serial = answer, key, slow, serial
        self.seen: list[Seen] = []
        self.in_flight = self.max_in_flight = 0
        self.computed = self.wasted = 0  # answers computed; of those, answers whose client had gone
        self._turns = threading.Condition()  # serial: a ticket per request, served in arrival order
        self._next_ticket = self._serving = 0
        self._faults: list[tuple[int, dict, bytes]] = []  # (status, headers, body), one per request, in order
        self._lock = threading.Lock()
        self._closing = threading.Event()  # ends the endless answers at shutdown
        self._bomb: bytes | None = None
        self._connections: set = set()  # open client connections, closed at exit (a server gone is gone)
        fixture = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                with fixture._lock:
                    fixture._connections.add(self.connection)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                fixture._handle(self, raw)

        self._server = _Listener(("127.0.0.1", port), Handler)  # port 0: a free one (tests)
        self._server.daemon_threads = True
        self._server.handle_error = lambda request, address: None  # a client that hangs up is no news
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread: threading.Thread | None = None

    # -- faults ------------------------------------------------------------------------------
    def throttle(self, n: int, retry_after: str | float = 1) -> None:
        with self._lock:
            self._faults += [
                (
                    429,
                    {"Retry-After": str(retry_after)},
                    _error("Rate limit reached; try again later.", "rate_limit_exceeded"),
                )
            ] * n

    def fail(self, n: int, status: int = 500, *, unique: bool = False) -> None:
        message = "The server had an error while processing your request."
        with self._lock:
            if not unique:
                self._faults += [(status, {}, _error(message, "server_error"))] * n
                return
            for k in range(n):  # the same error in words, never the same text
                rid = uuid.uuid4()
                self._faults.append(
                    (
                        status,
                        {"x-request-id": f"req_{rid.hex}"},
                        _error(
                            f"{message} (request id req_{rid.hex[:24]}, trace {rid}, attempt {k + 1}, "
                            f"at 0x{rid.int & 0xFFFFFFFF:08x})",
                            "server_error",
                        ),
                    )
                )

    def hostile(self, kind: str, n: int = 1) -> None:
        if kind not in HOSTILE:
            raise ValueError(f"hostile kind {kind!r}: expected one of {HOSTILE}")
        with self._lock:
            self._faults += [(0, {"kind": kind}, b"")] * n

    def _hostile(self, handler: BaseHTTPRequestHandler, kind: str, given: str) -> None:
        wfile = handler.wfile
        try:
            if kind == "hang":
                self._closing.wait()
                return
            if kind == "endless":
                handler.send_response(200)
                handler.send_header("content-type", "application/json")
                handler.end_headers()  # no length: the body ends when the connection does
                wfile.write(b'{"choices": [{"message": {"content": "')
                while not self._closing.wait(0.2):
                    wfile.write(b"x")
                    wfile.flush()
                return
            headers: dict = {}
            status = 200
            if kind == "gzip_bomb":
                if self._bomb is None:  # 1 GiB of zeros, ~1 MB gzipped (made once per server)
                    self._bomb = _bomb(2**30)
                payload, headers = self._bomb, {"content-encoding": "gzip"}
            elif kind == "deep_json":
                payload = b"[" * 200_000 + b"]" * 200_000
            elif kind == "huge_tokens":
                payload = _completion_bytes(r"Output:\n1. Reason: r. Title: T\n", 10**26)
            elif kind == "surrogate":
                payload = _completion_bytes(r"Output:\n1. Reason: r. Title: \ud800\n", 3)
            else:  # echo_key: the key from character 150 on, so the 160-character cut falls inside it
                status = 400
                payload = _error("x" * 150 + f" {given} was refused", "invalid_request")
            _send(handler, status, headers, payload)
        except OSError:  # the client went away (as it should, from an endless answer)
            pass

    @contextmanager
    def _turn(self) -> Iterator[None]:
        """Serial: wait for this request's turn (first come, first served); otherwise at once."""
        if not self.serial:
            yield
            return
        with self._turns:
            ticket = self._next_ticket
            self._next_ticket += 1
            while self._serving != ticket and not self._closing.is_set():
                self._turns.wait(0.5)
        try:
            yield
        finally:
            with self._turns:
                self._serving += 1
                self._turns.notify_all()

    # -- what was sent -----------------------------------------------------------------------
    @property
    def chat_requests(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.path.split("?")[0].endswith("/chat/completions")]

    def _handle(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        arrived = time.monotonic()
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        messages = body.get("messages") or []
        prompt = messages[-1].get("content") if messages and isinstance(messages[-1], dict) else None
        given = handler.headers.get("api-key") or (handler.headers.get("authorization") or "").removeprefix("Bearer ")
        key_ok = self.key is None or given == self.key
        with self._lock:
            fault = self._faults.pop(0) if self._faults else None
        if not handler.path.split("?")[0].endswith("/chat/completions"):
            status, headers, payload = 404, {}, _error(f"no route {handler.path}", "not_found")
        elif not key_ok:
            shown = f"{given[:3]}***{given[-4:]}" if given else "none"
            status, headers, payload = 401, {}, _error(f"Incorrect API key provided: {shown}.", "invalid_api_key")
        elif fault is not None and fault[0] == 0:
            with self._lock:
                self.seen.append(Seen(arrived, handler.path, prompt, 0, key_ok, body))
            self._hostile(handler, fault[1]["kind"], given)
            return
        elif fault is not None:
            status, headers, payload = fault
        else:
            with self._turn():
                with self._lock:
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    if self.slow:
                        time.sleep(self.slow)
                    text = self.answer(prompt or "")
                finally:
                    with self._lock:
                        self.in_flight -= 1
                        self.computed += 1
                        self.wasted += _gone(handler.connection)
            status, headers = 200, {}
            # answer() gives the content, or a dict with content, finish_reason, reasoning_content
            reply = text if isinstance(text, dict) else {"content": text}
            text = reply.get("content") or ""
            message = {"role": "assistant", "content": reply.get("content")}
            for name in ("reasoning_content", "reasoning"):
                if reply.get(name) is not None:
                    message[name] = reply[name]
            payload = json.dumps(
                {
                    "id": "chatcmpl-fixture",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": reply.get("finish_reason", "stop")}],
                    "usage": {
                        "prompt_tokens": len((prompt or "").split()),
                        "completion_tokens": len(text.split()),
                        "total_tokens": len((prompt or "").split()) + len(text.split()),
                    },
                }
            ).encode()
        with self._lock:
            self.seen.append(Seen(arrived, handler.path, prompt, status, key_ok, body))
        _send(handler, status, headers, payload)

    # -- lifetime ----------------------------------------------------------------------------
    def __enter__(self) -> ChatServer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:  # a kept-alive connection would otherwise still be answered
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Listener(ThreadingHTTPServer):
    request_queue_size = 256  # a client opening 64 connections at once meets no full backlog (5 by default)


def _gone(connection: socket.socket) -> bool:
    """Whether the client hung up (its end closed or reset): the answer is computed for nobody."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _error(message: str, code: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "error", "code": code}}).encode()


def _send(handler: BaseHTTPRequestHandler, status: int, headers: dict, payload: bytes) -> None:
    """One JSON response with its length and ``headers``."""
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(payload)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(payload)


def _completion_bytes(content_json: str, tokens: int) -> bytes:
    """A chat completion whose content is ``content_json`` (already JSON-escaped, so it may
    hold escapes Python's encoder would not write, such as a lone surrogate)."""
    return (
        '{"id": "chatcmpl-fixture", "object": "chat.completion", "choices": [{"index": 0, '
        f'"message": {{"role": "assistant", "content": "{content_json}"}}, "finish_reason": "stop"}}], '
        f'"usage": {{"prompt_tokens": {tokens}, "completion_tokens": {tokens}}}}}'
    ).encode()


def _bomb(size: int) -> bytes:
    """A gzip member of ``size`` zero bytes, compressed a block at a time (a few MB)."""
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(2**24)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    parts.append(packer.flush())
    return b"".join(parts)
