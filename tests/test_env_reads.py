"""Nothing below kitab/app reads the environment: a run's configuration is resolved once in
the app layer (kitab.app.runs.run_config) and carried to every step as an argument
(kitab.core.params.RunConfig), so a step on a remote worker does what the run says, not what
that worker's environment says. Checked from the source: an environment read (``os.environ``
other than setting a default, ``os.getenv``, ``getenv``) or a ``kitab.core.config.Settings()``
built from the environment, in kitab/core, kitab/sources, tasks or flows, fails this test."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BELOW_APP = ("kitab/core", "kitab/sources", "tasks", "flows")

# An environment read: os.environ[...] / .get / in, os.getenv, getenv(. Setting a default for
# another program's settings (os.environ.setdefault, Prefect's in kitab/core/env.py) is not one.
ENV_READ = re.compile(r"\bos \. environ\b(?! \. setdefault)|\bgetenv \(")
# The run settings built from the environment (pydantic-settings reads KITAB_* in __init__).
SETTINGS_BUILT = re.compile(r"(?<![\w.])Settings \( (\*\*|\)|\w+ =)")

# Reads that are not a run's configuration, each with its reason.
ALLOWED = {
    # a secret (the chat endpoint's API key) must never be recorded in a ledger nor carried in a config
    "kitab/sources/chat.py": "OPENAI_API_KEY",
}


def code_lines(text: str) -> dict[int, str]:
    """Line number -> its code tokens joined by spaces, strings and comments left out (a
    docstring that names ``os.environ`` is not a read)."""
    out: dict[int, list[str]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if not tok.string.strip() or tok.type in (tokenize.STRING, tokenize.COMMENT):
            continue
        out.setdefault(tok.start[0], []).append(tok.string)
    return {n: " ".join(parts) for n, parts in out.items()}


def env_reads(root: Path) -> list[str]:
    """``path:line: text`` of every environment read below kitab/app under ``root``."""
    found = []
    for top in BELOW_APP:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            core_settings = "from kitab.core.config import Settings" in text or rel == "kitab/core/config.py"
            lines = text.splitlines()
            for number, code in code_lines(text).items():
                line = lines[number - 1]
                read = ENV_READ.search(code) or (core_settings and SETTINGS_BUILT.search(code))
                if read and not (rel in ALLOWED and ALLOWED[rel] in text):
                    found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_nothing_below_the_app_reads_the_environment():
    assert env_reads(ROOT) == []


def test_the_check_finds_a_planted_read(tmp_path):
    """The check can fail: the reads this issue removed (the tagger selection in the registry,
    the workers in flows/runners.py, a Settings() in the pipeline), planted in a copy."""
    (tmp_path / "tasks" / "taggers").mkdir(parents=True)
    (tmp_path / "tasks" / "taggers" / "registry.py").write_text(
        'import os\ntext = os.environ.get("KITAB_TAGGERS", "")\n'
    )
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "runners.py").write_text('import os\nn = int(os.getenv("KITAB_WORKERS") or 1)\n')
    (tmp_path / "flows" / "pipeline.py").write_text(
        "from kitab.core.config import Settings\nsettings = Settings(**{})\n"
    )
    (tmp_path / "kitab" / "core").mkdir(parents=True)
    (tmp_path / "kitab" / "core" / "env.py").write_text('import os\nos.environ.setdefault("PREFECT_X", "1")\n')
    (tmp_path / "kitab" / "sources").mkdir(parents=True)
    found = env_reads(tmp_path)
    assert sorted(f.split(":")[0] for f in found) == [
        "flows/pipeline.py",
        "flows/runners.py",
        "tasks/taggers/registry.py",
    ]
