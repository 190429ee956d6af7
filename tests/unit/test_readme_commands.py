"""Every shell example in README.md, checked against what it names: each `baton` command exists
with the options it uses, each `make` target is in the Makefile, each `python -m` module can be
found, each exported variable is a setting baton reads, and each `curl` call is accepted by the
API (its path, method and body) with the shipped flows.yaml. The examples that need services to
do their work run in their own tests (tests/e2e/test_readme_task_type.py, test_readme_*.py)."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from oss.cli import main
from tests.api.support import auth, open_api

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def commands() -> list[list[str]]:
    """The README's shell lines as words, continuations joined, comments and `&` dropped."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), re.S):
        pending = ""
        for line in block.replace("\\\n", " ").splitlines():
            pending += line + "\n"
            try:
                words = [w for w in shlex.split(pending, comments=True) if w != "&"]
            except ValueError:  # a quoted argument (a JSON body) goes on over the next line
                continue
            pending = ""
            if words:
                found.append(words)
    return found


def test_every_shell_example_is_checked_here() -> None:
    kinds = {words[0].rsplit("/", 1)[-1] for words in commands()}
    assert kinds <= {"baton", "make", "python", "export", "mkdir", "curl"}, kinds


def test_every_baton_command_shown_exists_with_its_options() -> None:
    shown = [words for words in commands() if words[0].endswith("baton")]
    assert len(shown) > 20
    for words in shown:
        # --help after the arguments: click checks the command and its options, then stops.
        args = [w.replace("ID", "some-task") for w in words[1:]]
        result = CliRunner().invoke(main, [*args, "--help"])
        assert result.exit_code == 0, (words, result.output)
        for option in (w.split("=")[0] for w in args if w.startswith("--")):
            assert option in result.output, (words, option)


def test_every_make_target_and_module_shown_exists() -> None:
    makefile = (REPO / "Makefile").read_text()
    for words in commands():
        if words[0] == "make":
            assert re.search(rf"^{re.escape(words[1])}:", makefile, re.M), words
        if words[0].endswith("python") and words[1] == "-m":
            assert importlib.util.find_spec(words[2]) is not None, words


def test_every_variable_exported_is_a_setting() -> None:
    configuration = README.read_text().split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    exported = [words[1].split("=")[0] for words in commands() if words[0] == "export"]
    assert exported
    for name in exported:
        assert f"`{name}`" in configuration, name  # documented, so read (test_config_file checks the table)


def test_every_curl_call_is_accepted_by_the_api(tmp_path) -> None:
    calls = [words for words in commands() if words[0] == "curl"]
    assert len(calls) >= 2
    app, store, broker = open_api(tmp_path, flows=(REPO / "flows.yaml").read_text())
    from fastapi.testclient import TestClient

    task_id = None
    try:
        with TestClient(app) as client:
            for words in calls:
                method = words[words.index("-X") + 1]
                url = words[next(i for i, w in enumerate(words) if w.startswith("http")) ]
                path = "/" + url.split("/", 3)[3]
                body = json.loads(words[words.index("-d") + 1])
                if "$TASK_ID" in path:
                    assert task_id is not None, "a call on $TASK_ID comes after the one that made a task"
                    path = path.replace("$TASK_ID", task_id)
                response = client.request(method, path, json=body, headers=auth())
                # A retry of a task that has not failed is refused as such (409), not as a bad call.
                assert response.status_code in (200, 201, 409), (words, response.text)
                if response.status_code == 409:
                    assert "retry" in response.text.lower() or "rolled" in response.text.lower(), response.text
                task_id = response.json().get("task_id", task_id)
    finally:
        store.close()
        broker.close()
