# syntax=docker/dockerfile:1
# One image for every part of baton; the first argument picks the role (deploy/entrypoint.sh):
#   docker run IMAGE oss | module resource | module mysql | module monitor | sweeper | up
# With no argument it runs `up`: everything in one process, for a try-out (-p 8080:8080).

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# tini is PID 1: it passes SIGTERM on to baton and reaps orphans a command may leave behind.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 baton \
    && useradd --system --uid 10001 --gid 10001 --home-dir /app --shell /usr/sbin/nologin baton

WORKDIR /app

# The runtime dependencies pyproject.toml declares and its `tracing` extra (not the test tools), at
# exactly the versions requirements.lock pins. Their own layer: a code change does not reinstall them.
COPY requirements.lock pyproject.toml ./
RUN python -m venv "$VIRTUAL_ENV" \
    && python -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["tracing"]))' > /tmp/runtime.txt \
    && pip install -r /tmp/runtime.txt -c requirements.lock \
    && rm /tmp/runtime.txt

# The code, installed in place (editable): files beside the modules, such as the console's
# static/ directory, are where the code looks for them, and the `baton` command is on PATH.
COPY common ./common
COPY oss ./oss
COPY modules ./modules
# Compiled here, once: PYTHONDONTWRITEBYTECODE and a read-only /app would otherwise have every
# `baton` command compile each module it imports from source, at every start.
RUN pip install --no-deps -e . \
    && python -m compileall -q common oss modules

COPY flows.yaml ./
COPY --chmod=0755 deploy/entrypoint.sh deploy/rabbitmq-users.sh ./deploy/
COPY deploy/rabbitmq_permissions.py ./deploy/
RUN install -d -o baton -g baton /app/var

# Defaults for a container; every BATON_* variable can override them (docs/reference/configuration.md).
# BATON_OSS_HOST: listen on every interface of the container, not its loopback only.
ENV BATON_OSS_HOST=0.0.0.0 \
    BATON_OSS_PORT=8080 \
    BATON_FLOWS_PATH=/app/flows.yaml \
    BATON_LOG_FORMAT=json

USER 10001:10001
EXPOSE 8080 9100
ENTRYPOINT ["tini", "--", "/app/deploy/entrypoint.sh"]
CMD ["up"]
