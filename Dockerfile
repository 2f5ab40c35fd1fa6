# One image for the Prefect server, the worker and the mirror: the same locked environment
# the README's `make` commands build.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends make git && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml requirements.lock Makefile README.md ./
COPY kitab kitab
COPY tasks tasks
COPY flows flows
COPY sql sql
COPY schemas schemas
COPY snapshots snapshots
COPY prefect.yaml ./
RUN make venv
ENV PATH=/app/.venv/bin:$PATH \
    KITAB_WAREHOUSE=/app/warehouse \
    DO_NOT_TRACK=1 \
    PREFECT_SERVER_ANALYTICS_ENABLED=false
