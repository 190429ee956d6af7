# The two commands of the README: `make run` (see baton work) and `make test`.
# Containers (deploy/README.md): `make image`, `make up` / `make down` (docker compose).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: venv run test soak test-fast chaos bench check-flows docs clean image up down k8s-flows

venv: $(VENV)/.installed

# Exact pins from requirements.lock: a run today and next month installs the same thing.
# `make run` needs only the runtime dependencies pyproject.toml declares (at the lock's
# versions): about half the install of the test tools, which `make test` adds.
$(VENV)/.runtime: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' > $(VENV)/runtime-requirements.txt
	$(BIN)/pip install -q -r $(VENV)/runtime-requirements.txt -c requirements.lock
	$(BIN)/pip install -q --no-deps -e .
	touch $@

# The test tools, and the Python client (client/, its own package: tests/client runs it).
$(VENV)/.installed: $(VENV)/.runtime requirements.lock client/pyproject.toml
	$(BIN)/pip install -q -r requirements.lock
	$(BIN)/pip install -q --no-deps -e ./client
	touch $@

# Everything in one process: OSS, every module, the sweeper, SQLite, the in-process broker.
# Runs a demo task, then serves the API (and console) until Ctrl-C.
run: $(VENV)/.runtime
	$(BIN)/baton up

# -- test tiers (docs/testing.md) ---------------------------------------------------------------
# make test: every test but the soak tier, on TEST_WORKERS pytest-xdist workers, one test file per
#   worker at a time (a file's module fixtures, its cluster and vhost, are started once). The
#   workers mostly wait on processes, brokers and databases, so there are more of them than
#   cores. Each worker has its own vhosts, databases, SecantusDB server, ports and temp dirs.
# make soak: the soak tier (marker `soak`): `make run` on a clean checkout, a reduced `make bench`,
#   SecantusDB killed and frozen under a running cluster, the Schemathesis CLI, the SIGTERM loop
#   at full length. CI runs both tiers.
# make chaos: the fault-injection scenarios in full (make test runs them reduced).
TEST_WORKERS ?= 4
PYTEST := $(BIN)/python -m pytest

test: venv
	$(PYTEST) -n $(TEST_WORKERS) --dist loadfile

soak: venv
	$(PYTEST) -n 2 --dist loadfile -m soak
	BATON_TEST_SIGTERM_RUNS=10 $(PYTEST) tests/e2e/test_sigterm_loop.py -p no:cacheprovider

test-fast: venv
	$(BIN)/python -m pytest tests/unit tests/contract

# The full fault-injection scenarios (the normal run has reduced ones); prints a table per scenario.
chaos: venv
	BATON_CHAOS=full $(BIN)/python -m pytest tests/chaos -q -p no:cacheprovider

# Rates and latencies next to a bare baseline measured in the same run; prints, asserts nothing.
bench: venv
	$(BIN)/python -m bench.run

check-flows: venv
	$(BIN)/baton check-flows flows.yaml

# docs/reference/configuration.md, from the settings classes (a test fails when it is stale).
docs: $(VENV)/.runtime
	$(BIN)/python -m tools.settings_doc

clean:
	rm -rf $(VENV) var .pytest_cache

# -- containers (need a Docker engine) -------------------------------------------------------
IMAGE ?= baton:latest
COMPOSE := docker compose --project-name baton --env-file deploy/.env -f deploy/docker-compose.yml

image:
	docker build -t $(IMAGE) .

# The stack's secrets, made up once and kept out of git (deploy/.gitignore).
deploy/.env:
	@umask 077 && $(PYTHON) -c 'import secrets; t = secrets.token_hex; print(f"RABBITMQ_PASSWORD={t(16)}\nRABBITMQ_ERLANG_COOKIE={t(24)}\nMARIADB_ROOT_PASSWORD={t(16)}\nBATON_API_TOKENS=admin:{t(24)}:operator")' > $@
	@echo "wrote $@: the RabbitMQ and MariaDB passwords and an operator API token for this stack"

up: deploy/.env
	$(COMPOSE) up -d --build --wait
	@echo "API: http://127.0.0.1:8080 and http://127.0.0.1:8081 (two OSS replicas); token: BATON_API_TOKENS in deploy/.env"
	@echo "RabbitMQ management: http://127.0.0.1:15672 (user baton, RABBITMQ_PASSWORD in deploy/.env)"

down:
	$(COMPOSE) down

# deploy/k8s/flows-configmap.yaml is flows.yaml as a ConfigMap; run after editing flows.yaml.
k8s-flows:
	{ printf '%s\n' '# Generated from flows.yaml by `make k8s-flows`: edit flows.yaml, then run it again.' \
	    'apiVersion: v1' 'kind: ConfigMap' 'metadata:' '  name: baton-flows' \
	    '  labels: {app.kubernetes.io/part-of: baton}' 'data:' '  flows.yaml: |'; \
	  sed 's/^\(.\)/    \1/' flows.yaml; } > deploy/k8s/flows-configmap.yaml
