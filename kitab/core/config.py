"""Run settings: one validated object, from defaults < environment (KITAB_*) < CLI flags.

Built from the environment (``Settings()``) in the app layer only (kitab/app); below it a
run's settings travel in its RunConfig (kitab.core.params) and are rebuilt with
:meth:`Settings.from_values`, which reads no environment.

Politeness numbers come from the services' published etiquette: WDQS runs one query at
a time per client (60 s of query time per minute); Open Library allows about 3 req/s
for JSON with an identifying User-Agent, and we default to 1 req/s to stay well under.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from kitab.core.env import PROJECT_ROOT
from kitab.core.policy import RetryPolicy
from kitab.core.version import __version__

RETRY = RetryPolicy()  # the retry numbers' one home (kitab/core/policy.py); KITAB_* may override them

LIVE_WIKIDATA = "https://query.wikidata.org/sparql"
LIVE_OPENLIBRARY = "https://openlibrary.org"
DEFAULT_CONTACT = "kitab-maintainers@example.org"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KITAB_", extra="forbid")

    warehouse: Path = PROJECT_ROOT / "warehouse"
    # Identifies us to both services (Wikimedia's User-Agent policy requires a contact).
    contact: str = DEFAULT_CONTACT
    wikidata_endpoint: str = LIVE_WIKIDATA
    openlibrary_base: str = LIVE_OPENLIBRARY
    # Requests per second to Open Library (per host). Against the local mirror the cap is
    # mirror_ol_rate: the mirror enforces its own limit, and the demo should not take minutes.
    ol_rate: float = Field(1.0, gt=0)
    mirror_ol_rate: float = Field(20.0, gt=0)
    # Minimum seconds between two WDQS queries (queries never overlap anyway).
    wdqs_min_interval: float = Field(1.0, ge=0)
    timeout_connect: float = Field(10.0, gt=0)
    timeout_read: float = Field(65.0, gt=0)  # WDQS may run a query for 60 s
    max_attempts: int = Field(RETRY.max_attempts, ge=1, le=20)
    max_retry_after: float = Field(RETRY.max_retry_after, gt=0)  # a Retry-After longer than this is an error
    backoff_initial: float = Field(RETRY.backoff_initial, ge=0)
    backoff_max: float = Field(RETRY.backoff_max, gt=0)
    # Open Library search page size; the API caps it (the original read one page of 500).
    ol_page_size: int = Field(100, ge=1, le=1000)
    # WikiData sampling runs one query per birth-year window to stay inside WDQS's 60 s.
    birth_year_min: int = 1850
    birth_year_window: int = Field(25, ge=1)
    min_works: int = 10
    max_works: int = 300

    @field_validator("warehouse")
    @classmethod
    def _absolute(cls, v: Path) -> Path:
        return Path(v).expanduser().resolve()

    @property
    def cache_dir(self) -> Path:
        return self.warehouse / ".cache"

    @property
    def user_agent(self) -> str:
        return f"kitab/{__version__} (KITAB benchmark refresh; {self.contact}) python-requests"

    @classmethod
    def from_values(cls, values: dict) -> Settings:
        """Settings from ``values`` (a :meth:`model_dump`) and the defaults, without reading the
        environment: how a step, a flow or a remote worker gets the run's settings (the app
        layer alone builds them from the environment, kitab.app.runs)."""
        fields = cls.model_fields
        known = {k: v for k, v in values.items() if k in fields}
        defaults = {k: f.default for k, f in fields.items()}
        merged = {**defaults, **known}
        merged["warehouse"] = Path(merged["warehouse"]).expanduser().resolve()
        return cls.model_construct(**merged)

    def for_mirror(self, base_url: str) -> Settings:
        """The same settings pointed at a local mirror: same clients, the mirror's rate cap."""
        return self.model_copy(
            update={
                "wikidata_endpoint": f"{base_url}/sparql",
                "openlibrary_base": base_url,
                "ol_rate": self.mirror_ol_rate,
                "wdqs_min_interval": 0.0,
            },
        )
