"""``kitab export --push REPO``: upload an exported release folder to the Hugging Face Hub
and tag the commit with the release id.

Token: never an argument. ``HfApi()`` finds it itself (``HF_TOKEN``, else the login saved by
``hf auth login``); kitab only checks that one is configured (``get_token() is None``) and
never passes, prints, logs or writes it.

Endpoint: ``endpoint``, else ``HF_ENDPOINT`` read at call time, else huggingface.co.

Offline mode: kitab sets ``HF_HUB_OFFLINE=1`` by default (``kitab/core/env.py``) so nothing else
reaches the Hub. huggingface_hub 2.x reads that variable once, at import, into
``huggingface_hub.constants.HF_HUB_OFFLINE``, and its HTTP client refuses every request while
``constants.is_offline_mode()`` (which returns that constant) is true. So the push lifts it by
setting the constant to False for the duration of the push only and restores it after, even
on error; the environment variable is left alone. Telemetry stays off during the push:
``constants.HF_HUB_DISABLE_TELEMETRY`` (with it on, huggingface_hub fetches an agent registry
from its default endpoint while building headers) and ``HF_XET_TELEMETRY_ENABLED=false`` unless
the user set it (hf_xet, which uploads files to the Hub's Xet storage, enables its own telemetry
by default and reads the variable when its session starts).
"""

from __future__ import annotations

import json
import os
import re
import threading
from contextlib import contextmanager
from pathlib import Path

from kitab.core.errors import BadValue, KitabError
from kitab.core.files import sha256_file
from kitab.release.export import CARD, PROVENANCE, card_configs, release_of

REPO_TYPE = "dataset"
# Paths the export owns in the repo: replaced wholesale by each release (stale files deleted).
MANAGED = ["data/**", "plots/**"]
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ONLINE = threading.Lock()
XET_TELEMETRY = "HF_XET_TELEMETRY_ENABLED"


class PushFailed(KitabError):
    """The Hub (or the way to it) refused or failed a push: one line, the token never in it."""


class ReleaseAlreadyPushed(KitabError, RuntimeError):
    """The repo already has a tag named like the release: a published version is immutable."""


def valid_tag(release: str) -> bool:
    return bool(_TAG.match(release)) and ".." not in release and not release.endswith((".", ".lock"))


@contextmanager
def hub_online():
    """Let huggingface_hub reach its endpoint inside this block only (see the module doc)."""
    from huggingface_hub import constants

    with _ONLINE:
        saved = constants.HF_HUB_OFFLINE, constants.HF_HUB_DISABLE_TELEMETRY
        saved_xet = os.environ.get(XET_TELEMETRY)
        constants.HF_HUB_OFFLINE, constants.HF_HUB_DISABLE_TELEMETRY = False, True
        os.environ.setdefault(XET_TELEMETRY, "false")  # read by hf_xet when its session starts
        try:
            yield
        finally:
            constants.HF_HUB_OFFLINE, constants.HF_HUB_DISABLE_TELEMETRY = saved
            if saved_xet is None:
                os.environ.pop(XET_TELEMETRY, None)


class _NoToken(KitabError, PermissionError):
    pass


_SECRETS = (re.compile(r"(?i)(bearer|token)(\s*[:=]?\s*)[A-Za-z0-9_\-.]{8,}"), re.compile(r"hf_[A-Za-z0-9]{6,}"))


def redact(text: str, token: str | None) -> str:
    """``text`` without the token (by value, and anything shaped like a bearer or HF token)."""
    if token:
        text = text.replace(token, "***")
    text = _SECRETS[0].sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)
    return _SECRETS[1].sub("hf_***", text)


@contextmanager
def _one_line_errors():
    """Any failure of the Hub's client (an HTTP error and the server's body, no network, a
    refused upload) -> PushFailed: its first line, shortened, with the token redacted (a
    server may echo the request's Authorization header in its error body)."""
    try:
        yield
    except KitabError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the client raises is reported, never its traceback
        from huggingface_hub import get_token

        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        line = redact(lines[0], get_token())
        if len(line) > 300:
            line = line[:300] + "…"
        raise PushFailed(f"push failed: {type(exc).__name__}: {line}") from None


def _check_folder(folder: Path, release: str) -> dict:
    card, provenance = folder / CARD, folder / PROVENANCE
    if not card.is_file() or not provenance.is_file():
        raise BadValue(f"{folder} is not a kitab export (no {CARD} or {PROVENANCE}); run `kitab export` first")
    meta = json.loads(provenance.read_text(encoding="utf-8"))
    if release_of(meta) != release:
        raise BadValue(f"{folder} holds release {release_of(meta)!r}, not {release!r}")
    for config, splits in card_configs(card.read_text(encoding="utf-8")).items():
        for path in splits.values():
            if not (folder / path).is_file():
                raise BadValue(f"{folder}: the card's config {config} names {path}, which is missing")
    for path, info in meta.get("files", {}).items():
        if not (folder / path).is_file() or sha256_file(folder / path) != info["sha256"]:
            raise BadValue(f"{folder}/{path} is missing or changed since the export; export the release again")
    return meta


def check_token() -> None:
    """Refuse (one line) when no Hugging Face token is configured: ``kitab export --push``
    calls it before writing the export."""
    from huggingface_hub import get_token

    if get_token() is None:
        raise _NoToken(
            "no Hugging Face token: set HF_TOKEN or run `hf auth login` (kitab never takes the token as an argument)"
        )


def _fingerprint(folder: Path) -> str:
    """What a release's commit says of its content: the sha256 of provenance.json (which holds
    every data file's sha256, checked by _check_folder) and of the card."""
    return f"provenance.json sha256 {sha256_file(folder / PROVENANCE)}, {CARD} sha256 {sha256_file(folder / CARD)}"


def _committed_untagged(api, repo_id: str, release: str, fingerprint: str) -> str | None:
    """The commit on main of an earlier push of this very content whose tag was never created
    (a push that failed after its commit), else None."""
    title = f"kitab release {release}"
    for commit in api.list_repo_commits(repo_id, repo_type=REPO_TYPE):
        if commit.title == title and fingerprint in f"{commit.title}\n{commit.message}":
            return commit.commit_id
    return None


def _tag(api, repo_id: str, release: str, oid: str) -> None:
    """Tag ``oid``; a failure says that the release is committed but not tagged, and how to finish."""
    try:
        api.create_tag(repo_id, repo_type=REPO_TYPE, tag=release, revision=oid, tag_message=f"kitab release {release}")
    except Exception as exc:  # noqa: BLE001 - reported in one line, never its traceback
        from huggingface_hub import get_token

        reason = redact((str(exc).strip().splitlines() or [type(exc).__name__])[0], get_token())[:200]
        raise PushFailed(
            f"push failed: {repo_id}'s main has release {release} committed as {oid}, not tagged "
            f"({type(exc).__name__}: {reason}); rerun the same command to tag it"
        ) from None


def push_release(
    folder: Path, repo_id: str, *, release: str, endpoint: str | None = None, private: bool = False
) -> dict:
    """Upload the export ``folder`` of ``release`` to the dataset repo ``repo_id`` (created if
    missing, ``private`` then) in one commit, and tag that commit ``release``.

    Refuses (before uploading anything) when ``release`` is not a valid tag name, when the
    folder is not the export of ``release``, when no token is configured, and when the repo
    already has the tag (``ReleaseAlreadyPushed``). Files under ``data/`` and ``plots/`` that
    the folder lacks are deleted in the same commit, so each tagged commit holds exactly one
    release; other files of the repo (e.g. ``.gitattributes``) are kept.

    A push whose tag failed after its commit says so (committed as <sha>, not tagged); running it
    again finds that commit on main (its message names the release and the sha256 of its
    provenance.json and card: the same content) and tags it without uploading again.

    Returns ``{"repo_id", "release", "tag", "commit", "commit_url", "repo_url", "endpoint",
    "finished_earlier_commit"}``.
    """
    folder = Path(folder)
    if not valid_tag(release):
        raise BadValue(f"release id {release!r} is not usable as a git tag")
    _check_folder(folder, release)
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None

    from huggingface_hub import HfApi

    check_token()
    fingerprint = _fingerprint(folder)
    with hub_online(), _one_line_errors():
        api = HfApi(endpoint=endpoint)  # token=None: huggingface_hub resolves it (HF_TOKEN, then the login)
        repo_url = api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
        tags = {t.name: t.target_commit for t in api.list_repo_refs(repo_id, repo_type=REPO_TYPE).tags}
        if release in tags:
            raise ReleaseAlreadyPushed(
                f"{repo_id} already has tag {release} (commit {tags[release]}); a release "
                "is immutable: publish a new release id instead"
            )
        oid = _committed_untagged(api, repo_id, release, fingerprint)
        finished = oid is not None  # an earlier push committed this content; only its tag is missing
        if not finished:
            info = api.upload_folder(
                repo_id=repo_id,
                repo_type=REPO_TYPE,
                folder_path=folder,
                commit_message=f"kitab release {release}",
                commit_description=f"Export of kitab release {release}; tagged {release}. {fingerprint}.",
                delete_patterns=MANAGED,
            )
            oid = info.oid
        _tag(api, repo_id, release, oid)
    prefix = "" if REPO_TYPE == "model" else f"{REPO_TYPE}s/"
    return {
        "repo_id": repo_id,
        "release": release,
        "tag": release,
        "commit": oid,
        "commit_url": f"{api.endpoint}/{prefix}{repo_id}/commit/{oid}",
        "repo_url": str(repo_url),
        "endpoint": api.endpoint,
        "finished_earlier_commit": finished,
    }
