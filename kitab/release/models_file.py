"""The models file of ``kitab cycle`` and ``kitab serve --models``: the models a cycle answers and
scores, one ``[[model]]`` table each (TOML, read with the standard library's ``tomllib``):

    [[model]]
    name = "alpha"                          # the leaderboard's name (evaluations.model)
    base_url = "http://127.0.0.1:8000/v1"   # any OpenAI-compatible endpoint
    model = "served-model-id"               # sent as "model"
    api_key_env = "ALPHA_KEY"               # optional: the variable holding its key
    temperature = 0.0                       # optional, like every key below (default 0; "none": not sent)
    max_tokens = 400                        # or max_completion_tokens, not both
    concurrency = 4
    budget = 5000                           # requests per cycle at most
    rate = 2.0                              # request starts per second at most
    timeout = 120                           # seconds for one request
    limit = 40                              # a seeded sample of N prompts per task (a trial; beats --limit)

Pure: the file is read and checked here, nothing is asked. Every mistake is one line naming the
file, the model and the key (``BadValue``). The key itself is never read here: only the name of
its variable, read where the request is sent (kitab/sources/chat.py); a model without
``api_key_env`` is sent no key (a local server), so a key meant for one endpoint never reaches
another. docs/cycle.md describes the format.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from kitab.core.errors import BadValue, KitabError
from kitab.core.policy import DEFAULT_TEMPERATURE, ChatPolicy, temperature_value
from kitab.sources.chat import KeyFrom, Params, checked_base_url

# A leaderboard name is also a file name (<model>.<task>.jsonl) and a page's name on the site.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULTS = ChatPolicy()
KEYS = (
    "name",
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "concurrency",
    "budget",
    "rate",
    "timeout",
    "limit",
)
REQUIRED = ("name", "base_url", "model")


@dataclass(frozen=True)
class ModelSpec:
    """One ``[[model]]`` table, checked."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    temperature: float | None = DEFAULT_TEMPERATURE  # kitab answer's and the library's one default; None: not sent
    max_tokens: int | None = None  # None (and no max_completion_tokens): the task's
    max_completion_tokens: int | None = None
    concurrency: int = DEFAULTS.concurrency
    budget: int | None = None  # requests per cycle, both tasks together (None: no cap)
    rate: float | None = None
    timeout: float = DEFAULTS.timeout
    limit: int | None = None  # a seeded sample of N prompts per task (kitab cycle --limit's, for this model only)

    def params(self, task_max_tokens: int | None) -> Params:
        """The chat parameters for a task whose answer length is ``task_max_tokens``."""
        if self.max_completion_tokens is not None:
            return Params(
                temperature=self.temperature, max_tokens=None, max_completion_tokens=self.max_completion_tokens
            )
        return Params(
            temperature=self.temperature, max_tokens=self.max_tokens if self.max_tokens is not None else task_max_tokens
        )

    def policy(self, budget_left: int | None) -> ChatPolicy:
        """How the endpoint is asked, with ``budget_left`` requests still allowed (None: no cap)."""
        return ChatPolicy(timeout=self.timeout, concurrency=self.concurrency, rate=self.rate, budget=budget_left)

    def key(self) -> KeyFrom:
        """Where its key comes from: its variable, required; none without ``api_key_env``."""
        return KeyFrom(self.api_key_env, required=True) if self.api_key_env else KeyFrom(None)


def _number(where: str, key: str, value, *, whole: bool, low: float, low_open: bool = False) -> float | int:
    kind = "a whole number" if whole else "a number"
    ok = isinstance(value, int) if whole else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or (not whole and not math.isfinite(value)):
        raise BadValue(f"{where}: {key} = {value!r}: expected {kind}")
    if value < low or (low_open and value == low):
        bound = f"above {low:g}" if low_open else f"{low:g} or more"
        raise BadValue(f"{where}: {key} = {value!r}: expected {kind} {bound}")
    return value


def _string(where: str, key: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadValue(f"{where}: {key} = {value!r}: expected a non-empty string")
    return value.strip()


def check_model(table: dict, where: str) -> ModelSpec:
    """One ``[[model]]`` table as a :class:`ModelSpec`; ``where`` names it in errors."""
    unknown = [k for k in table if k not in KEYS]
    if unknown:
        raise BadValue(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    for key in REQUIRED:
        if key not in table:
            raise BadValue(f"{where}: {key} is missing")
    name = _string(where, "name", table["name"])
    if not NAME.fullmatch(name):
        raise BadValue(
            f"{where}: name = {name!r}: expected letters, digits, '.', '_' or '-', starting with a letter "
            "or digit, at most 64 (it names files and pages)"
        )
    base_url = _string(where, "base_url", table["base_url"])
    try:
        checked_base_url(base_url)
    except Exception as exc:  # KitabError, or httpx's InvalidURL: the same one line, placed in the file
        raise BadValue(f"{where}: base_url: {exc}") from None
    spec = {"name": name, "base_url": base_url, "model": _string(where, "model", table["model"])}
    if "api_key_env" in table:
        env = _string(where, "api_key_env", table["api_key_env"])
        if not ENV_NAME.fullmatch(env):
            raise BadValue(f"{where}: api_key_env = {env!r}: expected a variable's name (letters, digits, _)")
        spec["api_key_env"] = env
    if "max_tokens" in table and "max_completion_tokens" in table:
        raise BadValue(f"{where}: max_tokens and max_completion_tokens: give one, not both")
    numbers = {
        "max_tokens": dict(whole=True, low=1),
        "max_completion_tokens": dict(whole=True, low=1),
        "concurrency": dict(whole=True, low=1),
        "budget": dict(whole=True, low=1),
        "limit": dict(whole=True, low=1),
        "rate": dict(whole=False, low=0.0, low_open=True),
        "timeout": dict(whole=False, low=0.0, low_open=True),
    }
    if "temperature" in table:  # a number from 0 to 2, or "none" (a reasoning model that refuses one)
        try:
            spec["temperature"] = temperature_value(table["temperature"])
        except KitabError as exc:
            raise BadValue(f"{where}: {exc}") from None
    for key, rule in numbers.items():
        if key in table:
            spec[key] = _number(where, key, table[key], **rule)
    if spec.get("concurrency", 1) > 256:
        raise BadValue(f"{where}: concurrency = {spec['concurrency']}: expected at most 256")
    return ModelSpec(**spec)


def parse_models(text: str, source: str) -> list[ModelSpec]:
    """The models of a models file's ``text`` (``source``: its name, for the errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadValue(f"{source}: not TOML: {exc}") from None
    unknown = [k for k in data if k != "model"]
    if unknown:
        raise BadValue(f"{source}: unknown key {unknown[0]!r} (a models file holds [[model]] tables only)")
    tables = data.get("model")
    if not tables:
        raise BadValue(f"{source}: no [[model]] table: name at least one model")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise BadValue(f"{source}: model: expected [[model]] tables")
    models, seen = [], set()
    for number, table in enumerate(tables, 1):
        label = table.get("name") if isinstance(table.get("name"), str) else None
        where = f"{source}: model {label!r}" if label else f"{source}: model #{number}"
        model = check_model(table, where)
        if model.name in seen:
            raise BadValue(f"{where}: name {model.name!r} is given twice (each model's name is its own)")
        seen.add(model.name)
        models.append(model)
    return models


def read_models(path: Path | str) -> list[ModelSpec]:
    """The models file at ``path``, checked (:func:`parse_models`)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise BadValue(f"{path}: no such models file") from None
    except IsADirectoryError:
        raise BadValue(f"{path}: a folder, not a models file") from None
    except UnicodeDecodeError:
        raise BadValue(f"{path}: not UTF-8 text (a models file is TOML)") from None
    except OSError as exc:
        raise BadValue(f"{path}: cannot read it ({exc.strerror})") from None
    return parse_models(text, str(path))
