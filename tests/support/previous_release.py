"""The previous release: the commit of this repository whose modules, sweeper and OSS the
rolling-upgrade test runs beside the current code, and whose document models
tests/contract/previous_release/documents.schema.json was written from.

To move it when a release ships: set RELEASE to that release's last commit (a tag or a hash in
main's history), then regenerate the schema from it:

    .venv/bin/python -m tests.support.previous_release > tests/contract/previous_release/documents.schema.json

A contract test fails while the schema names another commit than RELEASE.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The last commit before the engine's transitions changed shape (one store write per step,
# a lean codec on the hot path): the release a running deployment upgrades from.
RELEASE = "6dd89b5"
# What a process of that release imports: its code, and the test stand-ins' helpers.
PATHS = ("common", "modules", "oss", "tests/__init__.py", "tests/support")


def missing_reason() -> str | None:
    """Why this checkout cannot give the previous release (a shallow clone, no git), or None."""
    try:
        found = subprocess.run(["git", "cat-file", "-e", f"{RELEASE}^{{commit}}"], cwd=REPO, capture_output=True)
    except FileNotFoundError:
        return f"no git to take the previous release ({RELEASE}) from"
    if found.returncode == 0:
        return None
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True)
    if shallow.stdout.strip() == "true":
        return f"a shallow clone has no previous release ({RELEASE}); `git fetch --unshallow` brings it"
    if shallow.returncode != 0:
        return f"not a git checkout: no previous release ({RELEASE}) to run"
    # Full history, and the commit is not in it: the pin is wrong, which must fail, not skip.
    raise AssertionError(f"the previous release {RELEASE} is not a commit of this repository's history")


def materialise(into: Path) -> Path:
    """The previous release's code (PATHS) written under `into`, as `git archive` gives it."""
    archive = subprocess.run(["git", "archive", "--format=tar", RELEASE, *PATHS], cwd=REPO, capture_output=True,
                             check=True)  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


SCHEMA = """import json, sys
from common.engine.document import Task, StepMessage
print(json.dumps({'release': sys.argv[1], 'Task': Task.model_json_schema(),
                  'StepMessage': StepMessage.model_json_schema()}, indent=1, sort_keys=True))"""


def schema_text() -> str:
    """documents.schema.json as the previous release's own models write it."""
    with tempfile.TemporaryDirectory() as folder:
        tree = materialise(Path(folder))
        return subprocess.run([sys.executable, "-c", SCHEMA, RELEASE], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                              capture_output=True, text=True, check=True).stdout  # fmt: skip


if __name__ == "__main__":
    reason = missing_reason()
    if reason:
        sys.exit(reason)
    json.loads(text := schema_text())
    sys.stdout.write(text)
