"""The API matches its own OpenAPI document: schemathesis with every check it has, over every
operation, with every token role.

Two runs, because each reaches what the other does not:
- in-process, one bounded hypothesis run per operation, positive (schema-valid: must be taken)
  and negative (schema-invalid: must be refused) data, with a share of the cases using real task
  and alarm ids so they get past 404 into the handlers. Driven by hand rather than through
  schemathesis' pytest plugin, whose fixture support does not work with this pytest;
- the schemathesis CLI against OSS served by a real process, which adds the phases only it runs:
  the schema's examples, coverage (boundary values, every other HTTP method, missing headers:
  the `Allow` of a 405) and stateful chains that follow the document's links.

Every check: a 5xx, an undocumented status code, header or body, valid data refused, invalid
data accepted, a wrong `Allow`, auth ignored... all fail the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.generation.modes import GenerationMode

from tests.api.support import OPERATOR, READER, SUBMITTER, auth
from tests.deploy.support import clean_env
from tests.support.ports import free_port
from tests.support.cluster import wait_until

load_all_checks()
ALL_CHECKS = [CHECKS.get_one(name) for name in CHECKS.get_all_names()]
ROLES = {"operator": OPERATOR, "submit": SUBMITTER, "read": READER}
# Examples per operation, role and mode: `make test` runs a quick pass, the soak tier a deep one.
QUICK_EXAMPLES, DEEP_EXAMPLES = 6, 30
CLI_EXAMPLES = 15
KNOWN: dict[str, list[str]] = {}
CLI_CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[schemathesis.BaseSchema]:
    from tests.api.fuzz_server import seeded_api

    app, store, known = seeded_api(Path(tmp_path_factory.mktemp("fuzz")))
    KNOWN.update(known)
    config = schemathesis.config.SchemathesisConfig.from_path(CLI_CONFIG)  # one configuration for both runs
    yield schemathesis.openapi.from_asgi("/api/v1/openapi.json", app, config=config)
    app.state.baton.service.close()
    store.close()


def guided(case: schemathesis.Case, pick: st.DataObject) -> schemathesis.Case:
    """Half the cases: real ids in the path (the task types are in the schema already). A task's
    event stream lasts until the task ends: it is fuzzed with tasks that have ended."""
    if pick.draw(st.booleans()):
        for name in list(case.path_parameters or {}):
            if name in KNOWN:
                known = KNOWN["ended_task_id"] if case.path.endswith("/events") else KNOWN[name]
                case.path_parameters[name] = pick.draw(st.sampled_from(known))
    return case


def test_the_schema_publishes_each_task_types_parameters(api_schema: schemathesis.BaseSchema) -> None:
    body = api_schema.raw_schema["components"]["schemas"]["CreateTask"]
    assert body["discriminator"]["propertyName"] == "task_type"
    assert sorted(body["discriminator"]["mapping"]) == sorted(KNOWN["task_type"])
    create_db = api_schema.raw_schema["components"]["schemas"]["CreateTask_create_db"]["properties"]
    assert create_db["parameters"]["required"] == ["name"]
    assert create_db["parameters"]["properties"]["admin_password"]["writeOnly"] is True


@pytest.mark.parametrize("examples", [
    pytest.param(QUICK_EXAMPLES, id="quick"), pytest.param(DEEP_EXAMPLES, id="deep", marks=pytest.mark.soak),
])
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("role", list(ROLES))
def test_every_operation_passes_every_check(api_schema: schemathesis.BaseSchema, role: str, mode: GenerationMode,
                                            examples: int) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 14
    for operation in operations:

        @given(case=_cases(operation, mode), pick=st.data())
        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,  # the same examples every run: a failure is reproducible
            database=None,
        )
        def fuzz(case: schemathesis.Case, pick: st.DataObject) -> None:
            if mode is GenerationMode.NEGATIVE and any(isinstance(v, dict) for v in (case.query or {}).values()):
                # A URL holds no object: the request sends a mapping's keys as the parameter's
                # values (none for an empty one), a request the schema allows, not the invalid one
                # the case stands for.
                reject()
            guided(case, pick).call_and_validate(headers=auth(ROLES[role]), checks=ALL_CHECKS)

        try:
            fuzz()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE  # nothing to get wrong: no parameters, no body
        except BaseException as exc:  # schemathesis reports its failures as an exception group
            raise AssertionError(f"{operation.label} ({role}, {mode.value}): {exc}") from exc


# An operation's strategy, built once for every role: the roles differ in their token alone, and
# building a strategy (the bodies' schemas turned into hypothesis strategies, the task types'
# union first) is about a third of the in-process run's CPU.
_STRATEGIES: dict[tuple[str, GenerationMode], st.SearchStrategy] = {}


def _cases(operation: schemathesis.APIOperation, mode: GenerationMode) -> st.SearchStrategy:
    key = (operation.label, mode)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = operation.as_strategy(generation_mode=mode)
    return _STRATEGIES[key]


@pytest.fixture(scope="module")
def served_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("served")
    port = free_port()
    log = (directory / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.api.fuzz_server", str(directory), str(port)],
        env=clean_env(), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(f"{url}/healthz"), timeout=180, what="the fuzzed OSS to listen")  # a busy machine
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


# The CLI's run takes half a minute a role: the normal run takes the widest role and none (the
# in-process test above checks every role); BATON_CHAOS=full takes every one.
CLI_ROLES = [*ROLES, "none"] if os.environ.get("BATON_CHAOS", "").lower() == "full" else ["operator", "none"]


@pytest.mark.soak
@pytest.mark.parametrize("role", CLI_ROLES)
def test_the_schemathesis_cli_with_every_phase_and_check_finds_nothing(served_api: str, role: str, tmp_path: Path) -> None:
    command = [
        str(Path(sys.executable).parent / "st"), "--config-file", str(CLI_CONFIG),
        "run", f"{served_api}/api/v1/openapi.json",
        "--checks", "all", "--max-examples", str(CLI_EXAMPLES), "--seed", "1", "--no-color",
        # A task's event stream lasts until the task ends: the CLI finds ids of tasks still running
        # and would wait on each. The in-process run fuzzes it, with tasks that have ended.
        "--exclude-path-regex", "/events$",
    ]  # fmt: skip
    if role != "none":
        command += ["--header", f"Authorization: Bearer {ROLES[role]}"]
    # In a directory of its own: the CLI leaves a .schemathesis/ cache where it runs.
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, env=clean_env(), cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-8000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "generated" in run.stdout


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False
