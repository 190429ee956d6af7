"""`baton` starts without importing what only some commands need: the web framework, the drivers,
the engine's pydantic models, the logging set-up. Checked on sys.modules in a fresh interpreter,
so the test does not depend on how fast the machine is."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from oss.cli import COMMAND_MODULES, main
from tests.support.cluster import REPO

# Top-level packages and baton modules a command imports inside its function, never at start.
HEAVY = (
    "fastapi", "starlette", "uvicorn", "httpx", "pika", "pymongo", "bson", "mongomock", "structlog",
    "pydantic", "pydantic_settings", "yaml", "rich", "prometheus_client",
    "common.engine.document", "common.settings", "common.logging", "common.flows.loader",
    "common.store.sqlite.tasks", "common.store.mongo.tasks", "common.broker.rabbitmq", "oss.api",
    "oss.wiring", "oss.services.tasks", "oss.services.actions",
)  # fmt: skip


# What `baton get ID` never needs, on any store: the server, the broker, the flows, the engine's
# transitions, the log set-up's library (a client command logs errors only: set up when first used).
# (asyncio is not among them: pydantic_settings imports it, and the settings are read with it.)
NOT_FOR_GET = (
    "fastapi", "starlette", "uvicorn", "httpx", "pika", "bson", "pymongo", "yaml", "rich", "prometheus_client",
    "structlog", "oss.api", "oss.wiring", "oss.services.tasks", "common.flows.loader", "common.flows.catalog",
    "common.broker", "common.relay", "common.engine.core.entries", "common.engine.kinds.for_each.records", "common.runtime",
)  # fmt: skip


def _modules_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
                          env=env)  # fmt: skip
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy_in(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


def test_importing_the_cli_imports_nothing_heavy() -> None:
    assert _heavy_in(_modules_after("import oss.cli")) == []


def test_help_lists_every_command_without_importing_anything_heavy() -> None:
    code = (
        "import contextlib, io\nfrom oss.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "assert all(name in out.getvalue() for name in main.list_commands(None)), out.getvalue()"
    )
    assert _heavy_in(_modules_after(code)) == []


@pytest.mark.parametrize("group", ["hosts", "schedules", "bulk", "store"])
def test_a_group_s_help_imports_nothing_heavy(group: str) -> None:
    code = (
        "import contextlib, io\nfrom oss.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main([{group!r}, '--help'])"
    )
    assert _heavy_in(_modules_after(code)) == []


@pytest.mark.parametrize("options", [[], ["--json"]])
def test_get_on_a_sqlite_store_imports_no_server_broker_engine_or_log_library(tmp_path, options: list[str]) -> None:
    env = {**os.environ, "BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_BROKER_URL": "memory://",
           "BATON_FLOWS_PATH": str(REPO / "flows.yaml")}  # fmt: skip
    env.pop("BATON_LOG_LEVEL", None)  # the client's own quiet logging
    created = subprocess.run([sys.executable, "-m", "oss", "submit", "demo"], env=env, cwd=REPO, capture_output=True,
                             text=True, timeout=120, check=True)  # fmt: skip
    task_id = created.stdout.split()[1]
    code = (
        "import contextlib, io\nfrom oss.cli import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        f"    main(['get', {task_id!r}, *{options!r}])\n"
        f"assert {task_id!r} in out.getvalue(), out.getvalue()"
    )
    modules = _modules_after(code, env)
    if options:  # the document itself: read with the document model
        assert "common.engine.core.task_doc" in modules  # the probe ran the command: it read the task
    assert _heavy_in(modules, NOT_FOR_GET) == []


# What `baton get ID` and `baton list` never import for a plain task on a SQLite store
# (oss/cli/quick_reads.py): pydantic (the settings classes and the document model: most of a
# command's start), the broker's client, the store adapters. bench/cli_start.py prints the time.
NOT_FOR_QUICK_READS = (
    "pydantic", "pydantic_core", "pydantic_settings", "pika", "pymongo", "structlog", "common.engine.core.task_doc",
    "common.engine.document", "common.settings", "common.store.sqlite.tasks", "common.store.factory",
    "common.engine.registry", "oss.cli.render",
)  # fmt: skip


@pytest.mark.parametrize("command", [["get", "{task_id}"], ["list"], ["list", "--ids"]], ids=" ".join)
def test_get_and_list_of_a_plain_task_import_no_pydantic_nor_pika(tmp_path, command: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env.update({"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_BROKER_URL": "memory://",
                "BATON_FLOWS_PATH": str(REPO / "flows.yaml")})  # fmt: skip
    created = subprocess.run([sys.executable, "-m", "oss", "submit", "demo"], env=env, cwd=REPO, capture_output=True,
                             text=True, timeout=120, check=True)  # fmt: skip
    task_id = created.stdout.split()[1]
    args = [word.format(task_id=task_id) for word in command]
    code = (
        "import contextlib, io\nfrom oss.cli import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        f"    main({args!r})\n"
        f"assert {task_id!r} in out.getvalue(), out.getvalue()"  # the probe ran the command: it read the task
    )
    assert _heavy_in(_modules_after(code, env), NOT_FOR_QUICK_READS) == []


def test_the_quick_reads_probe_sees_the_document_model(tmp_path) -> None:
    """The check itself can fail: the full way (BATON_LOG_LEVEL set) imports what it looks for."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env.update({"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_BROKER_URL": "memory://",
                "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "BATON_LOG_LEVEL": "error"})  # fmt: skip
    subprocess.run([sys.executable, "-m", "oss", "submit", "demo"], env=env, cwd=REPO, capture_output=True, timeout=120,
                   check=True)  # fmt: skip
    code = "import contextlib, io\nfrom oss.cli import main\nwith contextlib.suppress(SystemExit):\n    main(['list'])"
    assert "pydantic" in _heavy_in(_modules_after(code, env), NOT_FOR_QUICK_READS)


def test_the_probe_sees_a_heavy_import() -> None:
    """The check itself can fail: a module that imports the API app is caught."""
    assert "fastapi" in _heavy_in(_modules_after("import oss.api.app"))


def test_every_command_module_holds_the_commands_the_group_names() -> None:
    for name in COMMAND_MODULES:
        command = main.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None and command.name == name
        assert command.get_short_help_str(), name


def test_every_command_a_module_defines_is_named_in_the_group() -> None:
    import importlib

    for module in set(COMMAND_MODULES.values()):
        for command in importlib.import_module(module).COMMANDS:
            assert COMMAND_MODULES.get(command.name) == module, f"{command.name} of {module} is not in COMMAND_MODULES"
