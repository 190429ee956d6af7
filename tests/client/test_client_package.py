"""The client is a package of its own: it declares httpx and pydantic and nothing else, importing
it loads nothing more (nothing of baton), baton's own packages do not import it, and its files
stay small."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata

from tests.client.conftest import CLIENT
from tests.support.doc_examples import REPO

DEPENDENCIES = {"httpx", "pydantic"}
SOURCES = sorted((CLIENT / "baton_client").rglob("*.py"))


def requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0].lower()


def needed_by(distributions: set[str]) -> set[str]:
    """The top-level modules of these distributions and of every one they require, as installed."""
    found, pending = set(), [d.replace("_", "-") for d in distributions]
    while pending:
        name = pending.pop()
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:  # required only on another Python (a marker)
            continue
        found.add(name)
        pending += [requirement_name(r).replace("_", "-") for r in requirements if "extra ==" not in r]
    return {module for module, owners in metadata.packages_distributions().items()
            if {owner.lower().replace("_", "-") for owner in owners} & found}  # fmt: skip


def loaded_by(statement: str) -> set[str]:
    """The top-level modules a fresh interpreter has loaded after `statement` (the client on its path)."""
    probe = f"import sys, json; {statement}; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    answer = subprocess.run([sys.executable, "-c", probe], env={"PYTHONPATH": str(CLIENT)}, cwd=CLIENT,
                            capture_output=True, text=True, check=True)  # fmt: skip
    return set(json.loads(answer.stdout))


def test_the_package_declares_httpx_and_pydantic_only() -> None:
    project = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "baton-client"
    assert {requirement_name(r) for r in project["dependencies"]} == DEPENDENCIES


def test_its_code_imports_the_standard_library_httpx_pydantic_and_itself_only() -> None:
    imported = set()
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == DEPENDENCIES | {"baton_client"}


def test_importing_it_loads_nothing_but_what_httpx_and_pydantic_load() -> None:
    loaded = loaded_by("import baton_client")
    # httpx loads its command line's libraries when they are installed (its `cli` extra): its doing.
    allowed = loaded_by("import httpx, pydantic") | needed_by(DEPENDENCIES) | set(sys.stdlib_module_names)
    beyond = loaded - allowed
    assert {name for name in beyond if not name.startswith("_")} == {"baton_client"}
    assert not {"common", "oss", "modules"} & loaded


def test_baton_itself_does_not_import_the_client() -> None:
    importers = [
        str(path.relative_to(REPO)) for package in ("common", "oss", "modules")
        for path in (REPO / package).rglob("*.py") if re.search(r"^\s*(from|import) baton_client", path.read_text(), re.M)
    ]  # fmt: skip
    assert importers == []


def test_every_file_of_the_client_is_small() -> None:
    assert SOURCES and [str(p.relative_to(CLIENT)) for p in SOURCES if len(p.read_text().splitlines()) > 400] == []
