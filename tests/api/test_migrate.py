"""POST /api/v1/task-types/{name}/migrate and `baton migrate`: tasks in flight move to the
revision the service runs, a dry run first; a moved task runs the new steps and rolls back
exactly the steps that ran."""

from __future__ import annotations

import json
import uuid

from click.testing import CliRunner
from fastapi.testclient import TestClient

from common.flows import load_flows
from oss.cli import main
from tests.api.support import FAIL, FLOWS, OK, READER, Api, auth, open_api

# The corrected flow: `create` gets a longer timeout, and a third step registers the database.
NEW_FLOWS = FLOWS.replace(
    "        normal:   {module: mysql, command: noop}\n        rollback: {module: mysql, command: noop_rollback}\n",
    "        normal:   {module: mysql, command: noop, timeout: 30}\n        rollback: {module: mysql, command: noop_rollback}\n"
    "      - name: register\n        normal:   {module: monitor, command: noop}\n"
    "        rollback: {module: monitor, command: noop_rollback}\n",
)


def corrected(tmp_path, api: Api):
    """The same store served by an API that loaded the corrected flows.yaml (a restarted OSS)."""
    app, store, broker = open_api(tmp_path, NEW_FLOWS)
    return Api(TestClient(app), store, broker), load_flows(tmp_path / "flows.yaml").get("create_db").content_hash


def migrate(api: Api, to: str, token: str | None = None, **body: object):
    body = {"to": to, "reason": "create needs 30 s", **body}
    return api.client.post("/api/v1/task-types/create_db/migrate", json=body, headers=auth(token) if token else auth())


def test_a_dry_run_lists_what_moves_then_apply_moves_it_and_rollback_stays_exact(api: Api, tmp_path) -> None:
    fresh = api.create()["task_id"]  # reserve dispatched, create not started: movable
    started = api.create()["task_id"]
    api.step(started)
    api.step(started, finish=False)  # create claimed: it runs the old definition
    ended = api.rolled_back()  # not in flight
    new, target = corrected(tmp_path, api)
    with new.client:
        dry = migrate(new, target)
        assert dry.status_code == 200, dry.text
        outcome = dry.json()
        assert outcome["dry_run"] is True and outcome["matched"] == 2 and outcome["moved"] == [fresh]
        assert outcome["refused"] == [{"task_id": started, "reason": "step create has started and its definition "
                                                                   "changed (NormalTimeout)"}]  # fmt: skip
        assert len(new.get(f"/api/v1/tasks/{fresh}").json()["Steps"]) == 2  # nothing written
        applied = migrate(new, target, dry_run=False).json()
        assert applied["moved"] == [fresh] and ended not in applied["moved"] + applied["current"]
        task = new.get(f"/api/v1/tasks/{fresh}").json()
        assert [s["Name"] for s in task["Steps"]] == ["reserve", "create", "register"] and task["FlowHash"] == target
        assert any(e["Event"] == "migrated" and e["Actor"] == "olga" and "create needs 30 s" in e["Message"]
                   for e in task["History"])  # fmt: skip
        again = migrate(new, target).json()
        assert again["current"] == [fresh] and again["moved"] == []
        # The moved task runs the new step; when it fails, every step that ran is rolled back.
        new.step(fresh)
        new.step(fresh)
        new.step(fresh, FAIL)
        for _ in range(3):
            new.step(fresh, OK)
        done = new.get(f"/api/v1/tasks/{fresh}").json()
        assert done["TaskStatus"] == 4
        assert [s["State"] for s in done["Steps"]] == ["rolled_back", "rolled_back", "rolled_back"]


def test_refusals_name_the_problem(api: Api, tmp_path) -> None:
    new, target = corrected(tmp_path, api)
    with new.client:
        wrong = migrate(new, "sha256:0000000000000000")
        assert wrong.status_code == 409 and "names no revision this service holds" in wrong.text
        assert wrong.json()["error"]["code"] == "unknown_revision"
        assert target in wrong.text
        assert migrate(new, target, token=READER).status_code == 403
        assert migrate(new, target, reason=" ").status_code == 422
        assert migrate(new, target, surprise=1).status_code == 422
        missing = new.client.post("/api/v1/task-types/nope/migrate", json={"to": target, "reason": "r"}, headers=auth())
        assert missing.status_code == 404


def test_the_cli_dry_runs_then_applies(api: Api, tmp_path) -> None:
    fresh = api.create()["task_id"]
    new, target = corrected(tmp_path, api)
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml"),
           "BATON_BROKER_URL": f"memory://cli-{uuid.uuid4().hex}"}  # fmt: skip

    def run(*args: str):
        return CliRunner().invoke(main, ["migrate", "--type", "create_db", "--reason", "timeout", *args], env=env)

    dry = run("--to", target)
    assert dry.exit_code == 0, dry.output
    assert "would move 1" in dry.output and "--apply" in dry.output
    assert len(new.store.get(fresh).Steps) == 2
    applied = run("--to", target, "--apply", "--json")
    assert applied.exit_code == 0, applied.output
    assert json.loads(applied.stdout)["moved"] == [fresh]
    assert len(new.store.get(fresh).Steps) == 3
    wrong = run("--to", "v9")
    assert wrong.exit_code == 2 and "names no revision this service holds" in wrong.output


class SecondCallBetween:
    """The real store, where another `migrate --apply` runs right after this call listed its
    tasks: the interleaving of two concurrent calls, made certain."""

    def __init__(self, store, second) -> None:
        self._store, self._second = store, second

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def list_tasks(self, *args, **kwargs):
        found = self._store.list_tasks(*args, **kwargs)
        second, self._second = self._second, None
        if second is not None:
            second()
        return found


def test_concurrent_applies_never_list_a_moved_task_as_refused(api: Api, tmp_path) -> None:
    from oss.services.migrations import Migrations

    fresh = api.create()["task_id"]
    new, target = corrected(tmp_path, api)
    with new.client:
        context = new.client.app.state.baton

        def migrations(store) -> Migrations:
            return Migrations(store, context.flows, context.service.actions, context.clock, 30.0)

        second: list = []
        racing = SecondCallBetween(context.store, lambda: second.append(
            migrations(context.store).run("create_db", target, actor="bob", reason="second", dry_run=False)))
        first = migrations(racing).run("create_db", target, actor="olga", reason="first", dry_run=False)
        assert second[0].moved == [fresh]
        assert (first.moved, first.current, first.refused) == ([], [fresh], [])
        assert new.store.get(fresh).FlowHash == target


def test_an_unknown_revision_is_quoted_with_its_invisible_characters_escaped(api: Api, tmp_path) -> None:
    new, target = corrected(tmp_path, api)
    with new.client:
        refused = migrate(new, "v1\u202e2")  # the API refuses a bidi control in `to` before anything
        assert refused.status_code == 422 and "\u202e" not in refused.text
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'api.db'}", "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml"),
           "BATON_BROKER_URL": f"memory://cli-{uuid.uuid4().hex}"}  # fmt: skip
    wrong = CliRunner().invoke(main, ["migrate", "--type", "create_db", "--reason", "r", "--to", "v1\u202e2\x1b[2J"],
                               env=env)  # fmt: skip
    assert wrong.exit_code == 2, wrong.output
    assert '--to "v1\\u202e2\\x1b[2J" names no revision' in wrong.output and "\u202e" not in wrong.output


def test_a_migration_s_reason_is_masked_in_its_log_line_and_the_moved_tasks_history(api: Api, tmp_path, capsys) -> None:
    from common.logging import configure_logging

    moved = api.create(parameters={"name": "db1", "admin_password": "admin-canary-71"})["task_id"]
    new, target = corrected(tmp_path, api)
    configure_logging("json", "debug")
    try:
        with new.client:
            answer = migrate(new, target, reason="longer timeout; password=reason-canary-72 as admin-canary-71",
                             dry_run=False)
    finally:
        configure_logging()
    assert answer.status_code == 200 and answer.json()["moved"] == [moved], answer.text
    captured = capsys.readouterr()
    log = captured.err + captured.out
    assert "tasks migrated" in log
    history = json.dumps([event.Message for event in new.store.get(moved).History])
    assert "longer timeout" in history
    for canary in ("reason-canary-72", "admin-canary-71"):
        assert canary not in log and canary not in history, canary
