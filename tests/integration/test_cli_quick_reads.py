"""`baton get` and `baton list` read a SQLite store's JSON straight (oss/cli/quick_reads.py,
oss/cli/render_doc.py) for the common case, and the full way (settings classes, the store adapter,
the document model) otherwise. Both ways must print the same thing: each task here, in a state
of its own, is shown both ways and compared (BATON_LOG_LEVEL set sends a command the full way).
The quick way is checked to have served the plain tasks, so the comparison is not of one way
with itself."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from common.engine.core.units import AttemptResult
from common.engine.states import ResultCode
from common.store.sqlite.tasks import SqliteStore
from oss.cli import main, quick_reads
from oss.cli.render_doc import plain_summary
from tests.api.support import FAIL, OK, SECRET, Api

FLOWS = """
version: 1
defaults: {timeout: 5, retry: 0}
task_types:
  create_db:
    parameters:
      name: {type: string, required: true}
      admin_password: {type: string, secret: true, min_length: 12}
      url: {type: string}
    steps:
      - name: reserve
        normal:   {module: resource, command: noop}
        rollback: {module: resource, command: noop_rollback}
      - name: create
        normal:   {module: mysql, command: noop}
        rollback: {module: mysql, command: noop_rollback}
  graph:
    steps:
      - name: a
        normal: {module: resource, command: noop}
      - name: b
        after: []
        normal: {module: mysql, command: noop}
      - name: c
        after: [a, b]
        normal: {module: monitor, command: noop}
  fan:
    parameters:
      hosts: {type: array, default: [h1, h2]}
    steps:
      - name: each
        for_each: hosts
        normal: {module: resource, command: noop}
"""
PASSWORD_URL = "mysql://admin:pa55word-in-url@db:3306/x"


@pytest.fixture
def cli(tmp_path: Any):
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_FLOWS_PATH": str(flows),
           "BATON_BROKER_URL": f"memory://quick-{uuid.uuid4().hex}", "BATON_LOG_LEVEL": None,
           "BATON_CONFIG_FILE": None}  # fmt: skip
    store = SqliteStore(tmp_path / "baton.db")

    def run(*args: str, full: bool = False):
        return CliRunner().invoke(main, list(args), env={**env, "BATON_LOG_LEVEL": "error" if full else None})

    yield run, Api(None, store, None), str(tmp_path / "baton.db")  # type: ignore[arg-type]
    store.close()


def _submitted(run, *args: str) -> str:
    done = run("submit", *args)
    assert done.exit_code == 0, done.output
    return done.stdout.split()[1]


def _tasks(run, driver: Api) -> dict[str, str]:
    """A task in each state the CLI shows, by what it is."""
    secret = [f"admin_password={SECRET}", f"url={PASSWORD_URL}"]
    made = {"submitted": _submitted(run, "create_db", "name=a", *secret)}
    made["running"] = _submitted(run, "create_db", "name=b", *secret)
    driver.step(made["running"], finish=False)
    made["succeeded"] = _submitted(run, "create_db", "name=c", *secret)
    driver.step(made["succeeded"])
    driver.step(made["succeeded"])
    made["rolled back"] = _submitted(run, "create_db", "name=d", *secret)
    driver.step(made["rolled back"])
    for result in (AttemptResult(ResultCode.FAILED, f"cannot log in as admin/{SECRET} at {PASSWORD_URL}"), OK, OK):
        driver.step(made["rolled back"], result)
    made["rollback failed"] = _submitted(run, "create_db", "name=e", *secret)
    driver.step(made["rollback failed"])
    driver.step(made["rollback failed"], FAIL)
    driver.step(made["rollback failed"], FAIL)
    made["checking again"] = _submitted(run, "create_db", "name=f", *secret)
    driver.step(made["checking again"], AttemptResult(ResultCode.OK, "3 of 5 copied", check_again=30))
    made["graph"] = _submitted(run, "graph")
    made["for_each"] = _submitted(run, "fan")
    return made


def test_get_and_list_print_the_same_the_quick_way_and_the_full_way(cli) -> None:
    run, driver, path = cli
    made = _tasks(run, driver)
    quick_served = set()
    for what, task_id in made.items():
        served, doc = quick_reads.task_doc(path, task_id)
        assert served and doc is not None, what
        if plain_summary(doc) is not None:
            quick_served.add(what)
        quick, full = run("get", task_id), run("get", task_id, full=True)
        assert quick.exit_code == full.exit_code == 0, (what, quick.output, full.output)
        assert quick.stdout == full.stdout, what
        assert SECRET not in quick.stdout and "pa55word-in-url" not in quick.stdout, (what, quick.stdout)
    assert quick_served == set(made) - {"for_each"}  # a for_each step is rendered the full way
    assert "not done yet" in run("get", made["checking again"]).stdout
    assert "(after nothing)" in run("get", made["graph"]).stdout
    for args in (["list"], ["list", "--limit", "3"], ["list", "--status", "ROLLED_BACK"], ["list", "--ids"],
                 ["list", "--type", "graph"], ["list", "--limit", "2", "--cursor", _cursor(run)]):  # fmt: skip
        quick, full = run(*args), run(*args, full=True)
        assert quick.exit_code == full.exit_code == 0, (args, quick.output, full.output)
        assert quick.stdout == full.stdout, args
    assert "cannot log in as admin/***" in run("list", "--status", "ROLLED_BACK").stdout


def test_no_such_task_is_exit_3_both_ways(cli) -> None:
    run, _, _ = cli
    _submitted(run, "graph")  # the store exists
    for full in (False, True):
        done = run("get", "no-such-task", full=full)
        assert done.exit_code == 3 and "no such task" in done.output


def test_the_quick_way_leaves_other_stores_and_settings_to_the_full_way(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    assert quick_reads.sqlite_file({"BATON_STORE_URL": url}) == str(tmp_path / "x.db")
    assert quick_reads.sqlite_file({}) == "var/baton.db"  # the settings' default
    assert quick_reads.sqlite_file({"BATON_STORE_URL": "mongodb://h/baton"}) is None
    assert quick_reads.sqlite_file({"BATON_STORE_URL": url, "BATON_CONFIG_FILE": "/etc/baton.env"}) is None
    assert quick_reads.sqlite_file({"BATON_STORE_URL": url, "BATON_LOG_LEVEL": "debug"}) is None
    assert quick_reads.sqlite_file({"baton_store_url": url}) is None  # a name the full reader matches


def _cursor(run) -> str:
    listed = run("list", "--limit", "2").stdout
    return listed.rsplit("--cursor ", 1)[1].strip(" )\n")

