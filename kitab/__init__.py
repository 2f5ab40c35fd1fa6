"""kitab: dynamic data collection for the KITAB constraint-satisfaction benchmark."""
from kitab.env import quiet_prefect_env

__version__ = "0.1.0"

# Before anything imports prefect: no telemetry, no UI, no network, quiet logs.
quiet_prefect_env()
