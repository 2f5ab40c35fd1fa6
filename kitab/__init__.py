"""kitab: dynamic data collection for the KITAB constraint-satisfaction benchmark."""

from kitab.core.env import quiet_prefect_env
from kitab.core.version import __version__  # noqa: F401  (kitab.__version__)

# Before anything imports prefect: no telemetry, no UI, no network, quiet logs.
quiet_prefect_env()
