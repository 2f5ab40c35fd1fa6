"""A loopback stand-in for the parts of the Hugging Face Hub API that ``kitab.release.hub.push_release``
uses through huggingface_hub 2.x: nothing leaves the machine.

Endpoints (JSON unless noted), every one requiring ``Authorization: Bearer <token>``:

    POST /api/repos/create                               create_repo
    GET  /api/{type}s/{ns}/{name}/refs                   list_repo_refs
    GET  /api/{type}s/{ns}/{name}/commits/{rev}          list_repo_commits (a push finding its untagged commit)
    GET  /api/{type}s/{ns}/{name}/tree/{rev}[/{path}]    list_repo_files (upload_folder's delete_patterns)
    GET  /api/{type}s/{ns}/{name}/revision/{rev}         repo_info (upload_folder when nothing changed)
    POST /api/validate-yaml                              create_commit's README check (legacy path)
    POST /api/{type}s/{ns}/{name}/preupload/{rev}        upload modes: always "regular" (no LFS / Xet)
    POST /api/{type}s/{ns}/{name}/commit/{rev}           NDJSON: header, file (base64), deletedFile
    POST /api/{type}s/{ns}/{name}/tag/{rev}              create_tag

``fail_next`` injects faults on demand: ``{"tag": 1}`` answers the next tag creation with a 503
(the commit before it has landed: a push interrupted between its commit and its tag); any
other operation by its name the same way (``"commit"``, ``"preupload"``, ``"refs"``, ...).

Bounded: it serves at most ``max_requests`` requests and stops by itself after
``max_seconds`` (or on ``stop()`` / leaving the ``with`` block). It binds 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

REPO_PATH = re.compile(
    r"^/api/(?P<type>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)/(?P<op>[a-z]+)(?:/(?P<rest>.*))?$"
)


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Commit:
    oid: str
    parent: str | None
    summary: str
    description: str
    files: dict[str, bytes]  # the whole tree after the commit


@dataclass
class Repo:
    repo_id: str
    repo_type: str
    private: bool
    commits: list[Commit] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)  # tag -> commit oid
    tag_messages: dict[str, str] = field(default_factory=dict)

    @property
    def head(self) -> Commit:
        return self.commits[-1]

    def resolve(self, rev: str) -> Commit | None:
        if rev == "main":
            return self.head
        if rev in self.tags:
            rev = self.tags[rev]
        return next((c for c in self.commits if c.oid == rev or (len(rev) >= 7 and c.oid.startswith(rev))), None)


@dataclass
class Request:
    method: str
    path: str
    authorization: str | None


class FakeHub:
    def __init__(self, token: str, *, max_seconds: float = 60.0, max_requests: int = 500):
        self.token = token
        self.max_requests = max_requests
        self.repos: dict[str, Repo] = {}
        self.requests: list[Request] = []
        self.fail_next: dict[str, int] = {}  # op -> how many of the next calls answer 503
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _reply(self, status: int, body, headers: dict | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with hub._lock:
                    hub.requests.append(Request(method, self.path, self.headers.get("Authorization")))
                    if len(hub.requests) > hub.max_requests:
                        status, payload, headers = 429, {"error": "fake hub: request budget exhausted"}, {}
                        threading.Thread(target=hub.stop, daemon=True).start()
                    elif self.headers.get("Authorization") != f"Bearer {hub.token}":
                        status, payload, headers = 401, {"error": "Invalid credentials in Authorization header"}, {}
                    else:
                        try:
                            status, payload, headers = hub.route(method, self.path, body)
                        except Exception as exc:  # a bug in the fake: say so, loudly
                            status, payload, headers = 500, {"error": f"fake hub: {exc!r}"}, {}
                self._reply(status, payload, headers)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-hub", daemon=True
        )
        self._timer = threading.Timer(max_seconds, self.stop)
        self._timer.daemon = True
        self._stopped = False

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> FakeHub:
        self._thread.start()
        self._timer.start()
        return self

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._timer.cancel()
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- API ---------------------------------------------------------------------------
    def route(self, method: str, raw_path: str, body: bytes):
        parts = urlsplit(raw_path)
        path, query = unquote(parts.path), parse_qs(parts.query)
        if method == "POST" and path == "/api/repos/create":
            return self.create_repo(json.loads(body))
        if method == "POST" and path == "/api/validate-yaml":
            return self.validate_yaml(json.loads(body))
        m = REPO_PATH.match(path)
        if not m:
            return 404, {"error": f"fake hub: no route {method} {path}"}, {}
        repo = self.repos.get(m["repo"])
        if repo is None or repo.repo_type + "s" != m["type"]:
            return 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}
        op, rest = m["op"], m["rest"] or ""
        if self.fail_next.get(op):
            self.fail_next[op] -= 1
            return 503, {"error": f"fake hub: injected failure of {op}"}, {}
        if method == "GET" and op == "refs":
            return (
                200,
                {
                    "branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": repo.head.oid}],
                    "converts": [],
                    "pullRequests": [],
                    "tags": [
                        {"name": t, "ref": f"refs/tags/{t}", "targetCommit": oid}
                        for t, oid in sorted(repo.tags.items())
                    ],
                },
                {},
            )
        if method == "GET" and op == "commits":
            commit = repo.resolve(rest)
            if commit is None:
                return 404, {"error": "Revision not found"}, {"X-Error-Code": "RevisionNotFound"}
            history = []  # newest first, along the parents (one page: no Link header)
            while commit is not None:
                history.append(
                    {
                        "id": commit.oid,
                        "authors": [{"user": "kitab-test"}],
                        "date": "2026-01-01T00:00:00.000Z",
                        "title": commit.summary,
                        "message": commit.description,
                    }
                )
                commit = repo.resolve(commit.parent) if commit.parent else None
            return 200, history, {}
        if method == "GET" and op == "tree":
            rev, _, sub = rest.partition("/")
            commit = repo.resolve(rev)
            if commit is None:
                return 404, {"error": "Revision not found"}, {"X-Error-Code": "RevisionNotFound"}
            recursive = query.get("recursive", ["false"])[0].lower() == "true"
            return 200, self._tree(commit, sub, recursive), {}
        if method == "GET" and op == "revision":
            commit = repo.resolve(rest)
            if commit is None:
                return 404, {"error": "Revision not found"}, {"X-Error-Code": "RevisionNotFound"}
            return (
                200,
                {
                    "id": repo.repo_id,
                    "sha": commit.oid,
                    "private": repo.private,
                    "siblings": [{"rfilename": f} for f in sorted(commit.files)],
                },
                {},
            )
        if method == "POST" and op == "preupload":
            files = json.loads(body)["files"]
            head = repo.head.files
            return (
                200,
                {
                    "files": [
                        {
                            "path": f["path"],
                            "uploadMode": "regular",
                            "shouldIgnore": False,
                            "oid": git_blob_sha1(head[f["path"]]) if f["path"] in head else None,
                        }
                        for f in files
                    ]
                },
                {},
            )
        if method == "POST" and op == "commit":
            return self.commit(repo, rest, body)
        if method == "POST" and op == "tag":
            commit = repo.resolve(rest)
            if commit is None:
                return 404, {"error": f"Invalid rev id: {rest}"}, {"X-Error-Code": "RevisionNotFound"}
            payload = json.loads(body)
            if payload["tag"] in repo.tags:
                return 409, {"error": f"Tag {payload['tag']} already exists"}, {}
            repo.tags[payload["tag"]] = commit.oid
            repo.tag_messages[payload["tag"]] = payload.get("message", "")
            return 200, {}, {}
        return 404, {"error": f"fake hub: no route {method} {path}"}, {}

    def create_repo(self, payload: dict):
        repo_id = f"{payload['organization']}/{payload['name']}" if payload.get("organization") else payload["name"]
        repo_type = payload.get("type") or "model"
        if repo_id in self.repos:
            return 409, {"error": "You already created this repo", "url": self._repo_url(self.repos[repo_id])}, {}
        repo = Repo(repo_id, repo_type, private=payload.get("visibility") == "private")
        attributes = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.png filter=lfs diff=lfs merge=lfs -text\n"
        repo.commits.append(
            Commit(
                self._oid(None, "initial commit", {".gitattributes": attributes}),
                None,
                "initial commit",
                "",
                {".gitattributes": attributes},
            )
        )
        self.repos[repo_id] = repo
        return 200, {"url": self._repo_url(repo), "name": repo_id, "id": repo_id}, {}

    def validate_yaml(self, payload: dict):
        content = payload.get("content", "")
        if content.startswith("---\n"):
            try:
                yaml.safe_load(content[4 : content.index("\n---\n", 4)])
            except (ValueError, yaml.YAMLError) as exc:
                return 400, {"errors": [{"message": str(exc)}]}, {}
        return 200, {"errors": [], "warnings": []}, {}

    def commit(self, repo: Repo, revision: str, body: bytes):
        if revision != "main":
            return 400, {"error": "fake hub: commits go to main only"}, {}
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            return 400, {"error": "NDJSON payload must start with a header line"}, {}
        header = lines[0]["value"]
        parent = header.get("parentCommit")
        if parent and parent != repo.head.oid:
            return 412, {"error": "A commit has happened since. Please refresh and try again."}, {}
        files = dict(repo.head.files)
        for line in lines[1:]:
            value = line["value"]
            if line["key"] == "file":
                if value.get("encoding") != "base64":
                    return 400, {"error": "fake hub: expected base64 content"}, {}
                files[value["path"]] = base64.b64decode(value["content"])
            elif line["key"] == "deletedFile":
                files.pop(value["path"], None)
            else:
                return 400, {"error": f"fake hub: unsupported operation {line['key']} (LFS/Xet not emulated)"}, {}
        oid = self._oid(repo.head.oid, header.get("summary", ""), files)
        repo.commits.append(Commit(oid, repo.head.oid, header.get("summary", ""), header.get("description", ""), files))
        return (
            200,
            {
                "commitUrl": f"{self._repo_url(repo)}/commit/{oid}",
                "commitOid": oid,
                "pullRequestUrl": None,
                "success": True,
            },
            {},
        )

    # -- helpers -----------------------------------------------------------------------
    def _repo_url(self, repo: Repo) -> str:
        prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
        return f"{self.url}/{prefix}{repo.repo_id}"

    @staticmethod
    def _oid(parent: str | None, summary: str, files: dict[str, bytes]) -> str:
        digest = hashlib.sha1(f"{parent}\n{summary}\n".encode())
        for path in sorted(files):
            digest.update(f"{path}\0{git_blob_sha1(files[path])}\n".encode())
        return digest.hexdigest()

    @staticmethod
    def _tree(commit: Commit, sub: str, recursive: bool) -> list[dict]:
        prefix = sub.strip("/") + "/" if sub.strip("/") else ""
        entries, folders = [], set()
        for path in sorted(commit.files):
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            if "/" in rel and not recursive:
                folders.add(prefix + rel.split("/", 1)[0])
                continue
            if recursive:
                parts = rel.split("/")[:-1]
                folders.update(prefix + "/".join(parts[: i + 1]) for i in range(len(parts)))
            data = commit.files[path]
            entries.append({"type": "file", "path": path, "size": len(data), "oid": git_blob_sha1(data)})
        return [
            {"type": "directory", "path": f, "oid": hashlib.sha1(f.encode()).hexdigest(), "size": 0}
            for f in sorted(folders)
        ] + entries
