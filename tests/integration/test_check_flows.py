"""`baton check-flows` on a user's checkout: a module of their own under modules/ is found by
the convention `baton up` uses (modules/<name>/commands.py, `registry`), with no flag; a typo'd
module or command is reported with its line. Run as the user runs it: a process in the checkout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.deploy.support import REPO, clean_env
from tests.support.cluster import STATE_DEADLINE

FLOWS = """\
version: 1
task_types:
  resize_disk:
    steps:
      - name: reserve
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: grow
        normal: {module: storage, command: grow_volume}
"""
STORAGE = """\
from common.runtime.registry import CommandContext, CommandRegistry

registry = CommandRegistry("storage")


@registry.command()
def grow_volume(ctx: CommandContext) -> dict:
    return {}
"""


def user_checkout(root: Path) -> Path:
    """baton's packages, and modules/ holding the built-in modules and the user's `storage`."""
    for name in ("common", "oss"):
        (root / name).symlink_to(REPO / name)
    (root / "modules").mkdir()
    for entry in (REPO / "modules").iterdir():
        (root / "modules" / entry.name).symlink_to(entry)
    (root / "modules" / "storage").mkdir()
    (root / "modules" / "storage" / "__init__.py").write_text("")
    (root / "modules" / "storage" / "commands.py").write_text(STORAGE)
    return root


def check_flows(root: Path, text: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    (root / "flows.yaml").write_text(text)
    env = {**clean_env(), "PYTHONPATH": str(root), **(env or {})}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([sys.executable, "-m", "oss.cli", "check-flows", "flows.yaml", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=STATE_DEADLINE)  # fmt: skip


def test_a_users_own_module_is_found_by_convention(tmp_path):
    run = check_flows(user_checkout(tmp_path), FLOWS)
    assert run.returncode == 0, run.stderr
    assert "flows.yaml: ok, 1 task types: resize_disk" in run.stdout


def test_a_typo_in_a_module_or_a_command_is_reported_with_its_line(tmp_path):
    root = user_checkout(tmp_path)
    run = check_flows(root, FLOWS.replace("module: storage", "module: storag"))
    assert run.returncode == 2
    assert 'flows.yaml:9: task_types.resize_disk.steps[1].normal.module: unknown module "storag" (known modules: monitor, mysql, resource, storage)' in run.stderr
    run = check_flows(root, FLOWS.replace("grow_volume", "grow_volum"))
    assert run.returncode == 2 and "grow_volum" in run.stderr and "grow_volume" in run.stderr


def test_a_registry_elsewhere_is_named_with_a_flag(tmp_path):
    root = user_checkout(tmp_path)
    (root / "elsewhere.py").write_text(STORAGE.replace('"storage"', '"disks"'))
    flows = FLOWS.replace("module: storage", "module: disks")
    assert check_flows(root, flows).returncode == 2
    run = check_flows(root, flows, "--registry", "elsewhere:registry")
    assert run.returncode == 0, run.stderr
    bad = check_flows(root, flows, "--registry", "nowhere:registry")
    assert bad.returncode == 2 and "nowhere" in bad.stderr and "Traceback" not in bad.stderr


def test_live_checks_against_the_modules_running_now(tmp_path):
    import time

    from common.store.side.modules import ModuleRegistration
    from common.store.sqlite.modules import SqliteModuleRegistry

    root = user_checkout(tmp_path)
    registry = SqliteModuleRegistry(root / "baton.db")
    for module, commands in (("resource", ["check_resource", "restore_resource"]), ("storage", ["grow_volume"])):
        registry.announce(ModuleRegistration(WorkerId=f"{module}@h:1", Module=module, Commands=commands, Version="1",
                                             Host="h", Pid=1, StartedAt=time.time(), HeartbeatAt=time.time()))  # fmt: skip
    registry.close()
    live = ("--live",)
    # Live while the last heartbeat is at most 3 x 600 s old: however long a loaded machine takes
    # to start the command, the modules announced above still count as running.
    env_store = {"BATON_STORE_URL": f"sqlite:///{root / 'baton.db'}", "BATON_MODULE_HEARTBEAT_SECONDS": "600"}
    assert check_flows(root, FLOWS, *live, env=env_store).returncode == 0
    typo = check_flows(root, FLOWS.replace("module: storage", "module: dnz"), *live, env=env_store)
    assert typo.returncode == 2
    assert 'normal.module: unknown module "dnz" (known modules: resource, storage)' in typo.stderr
