"""The module SDK's import paths of earlier releases still import, for a deprecation period:
each in a process of its own (as a module written against the earlier docs starts), with a
DeprecationWarning naming the path to use, and holding the names it held then."""

from __future__ import annotations

import json
import subprocess
import sys

from common.old_paths import OLD_PATHS
from tests.support.cluster import REPO

# Names a module took from each old path (its public names then, the ones modules imported).
NAMES = {
    "common.check_again": ["check_again"],
    "common.engine.check_again": ["check_again", "parse_answer"],
    "common.engine.transitions": ["create_task", "claim", "finish_attempt", "expire", "mark_sent"],
    "common.engine.units": ["new_id", "Refusal", "AttemptResult", "Timing", "record"],
    "common.models": ["Task", "Step", "Run", "StepMessage", "Alarm"],
    "common.statuses": ["TaskStatus", "Phase", "StepState", "RunState", "ResultCode"],
    "common.masking": ["masked_task_view", "masked_alarm", "scrubbed_text", "secret_values", "mask_parameters"],
    "common.store.port": ["TaskStore"],
    "common.store.mutate": ["mutate"],
    "common.store.task_filters": ["TaskFilter", "page_key"],
    "common.store.events_port": ["Event", "EventLog"],
    "common.store.sqlite_local": ["LocalConnections", "immediate", "translated"],
    "common.store.mongo_base": ["MongoAdapter", "again"],
    "common.store.mongo_client": ["open_client"],
    "common.store.mongo_errors": ["adapter_edge"],
    "common.store.mongo_indexes": ["IndexSpec", "ModuleIndexes"],
}

PROBE = """
import importlib, json, sys, warnings
found = {}
for old, names in json.loads(sys.argv[1]).items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
        exec(f"from {old} import {', '.join(names)}")  # the form a module's own file uses
    found[old] = {"missing": [n for n in names if not hasattr(module, n)],
                  "warnings": [(w.category.__name__, str(w.message), w.filename) for w in caught]}
print(json.dumps(found))
"""


def test_every_old_path_imports_in_a_fresh_process_with_a_deprecation_warning_naming_the_new_one():
    assert set(NAMES) == set(OLD_PATHS)
    ran = subprocess.run([sys.executable, "-c", PROBE, json.dumps(NAMES)], cwd=REPO, capture_output=True, text=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    found = json.loads(ran.stdout)
    for old, seen in found.items():
        assert seen["missing"] == [], (old, seen)
        (warning,) = seen["warnings"][:1]
        category, message, filename = warning
        assert category == "DeprecationWarning" and message.startswith(f"{old} is deprecated: import from "), warning
        assert OLD_PATHS[old][0] in message and "importlib" not in filename, warning


def test_a_path_that_exists_is_never_shadowed_and_an_unknown_one_still_fails():
    ran = subprocess.run([sys.executable, "-c", "import common.engine.core.check_again, common.store.tasks.port\n"
                          "try:\n    import common.no_such_thing\nexcept ModuleNotFoundError:\n    print('refused')"],
                         cwd=REPO, capture_output=True, text=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
                         timeout=120)  # fmt: skip
    assert ran.returncode == 0 and ran.stdout.strip() == "refused" and "Deprecation" not in ran.stderr, ran.stderr
