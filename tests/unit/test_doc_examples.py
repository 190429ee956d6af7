"""Every fenced code block of README.md and docs/, run or checked by what its fence says (the
convention: docs/README.md, "Examples in these pages are run"; the reader:
tests/support/doc_examples.py):

- `sh`: each `baton` command exists with the options it uses, each `make` target is in the
  Makefile, each `python -m` module can be found, each exported variable is a setting baton
  reads, and each `curl` call is accepted by the API (its path, method and body) with the
  shipped flows.yaml. The examples that need services to do their work run in their own tests
  (tests/e2e/test_doc_task_type.py, tests/unit/test_doc_*.py).
- `yaml flows` / `yaml step`: loaded by the flows.yaml loader.
- `python test=PATH`, `json`: compiled or parsed here, and run by the test they name.
- `text`: an output or a listing, shown as written; skipped, saying so.
- `<!-- not run: why -->` before a fence: skipped with that reason.
"""

from __future__ import annotations

import importlib.util
import json
import re
import textwrap

import pytest
import yaml
from click.testing import CliRunner

from common.flows import parse_flows
from oss.cli import main
from tests.api.support import auth, open_api
from tests.support.doc_examples import DOCS, REPO, Block, all_blocks, curl_request, shell_lines, substituted

BLOCKS = all_blocks()
CONFIGURATION = DOCS / "reference" / "configuration.md"
TRACING = REPO / "docs" / "guide" / "tracing.md"
SHELL_WORDS = {"baton", "make", "python", "export", "mkdir", "curl"}


def lines_of(code: str) -> list[list[str]]:
    """A shell block's lines as words (background or not)."""
    return [words for words, _ in shell_lines(code)]


def commands() -> list[list[str]]:
    return [words for b in BLOCKS if b.lang == "sh" and not b.not_run for words in lines_of(b.code)]


def check_shell(words: list[str], block: Block) -> None:
    if (assigned := substituted(words)) is not None:  # NAME=$(baton ...): the command inside is checked
        words = assigned[1]
    program = words[0].rsplit("/", 1)[-1]
    assert program in SHELL_WORDS, f"{block.where}: {program!r} is not checked here: mark the block not run"
    if program == "baton":
        # --help after the arguments: click checks the command and its options, then stops.
        args = [w.replace("ID", "some-task") for w in words[1:]]
        result = CliRunner().invoke(main, [*args, "--help"])
        assert result.exit_code == 0, (block.where, words, result.output)
        for option in (w.split("=")[0] for w in args if w.startswith("--")):
            assert option in result.output, (block.where, words, option)
    elif program == "make":
        assert re.search(rf"^{re.escape(words[1])}:", (REPO / "Makefile").read_text(), re.M), (block.where, words)
    elif program == "python" and words[1] == "-m":
        assert importlib.util.find_spec(words[2]) is not None, (block.where, words)
    elif program == "export":
        name = words[1].split("=")[0]
        # documented, so read: the table is generated from the settings classes; OpenTelemetry's
        # own variables in the tracing guide's table
        page = TRACING if name.startswith("OTEL_") else CONFIGURATION
        assert f"`{name}`" in page.read_text(), (block.where, name)


def check_yaml(block: Block) -> None:
    if "step" in block.tags:
        text = "version: 1\ntask_types:\n  t:\n    steps:\n" + textwrap.indent(textwrap.dedent(block.code), "      ")
    else:
        assert "flows" in block.tags, f"{block.where}: a yaml block is `yaml flows` or `yaml step`"
        text = block.code if re.search(r"^version:", block.code, re.M) else "version: 1\n" + block.code
    parse_flows(text, block.where)  # a problem raises FlowError naming the line


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_every_example_is_run_or_says_why_not(block: Block) -> None:
    if block.not_run:
        pytest.skip(f"{block.where}: not run: {block.not_run}")
    if block.lang == "text":
        pytest.skip(f"{block.where}: text is shown as written (an output, a listing), not a command")
    if block.test:
        test = REPO / block.test
        assert test.is_file(), f"{block.where}: test={block.test} does not exist"
        assert str(block.path.relative_to(REPO)) in test.read_text(), f"{block.test} does not read {block.where}"
    if block.lang == "sh":
        for words in lines_of(block.code):
            check_shell(words, block)
    elif block.lang == "yaml":
        check_yaml(block)
    elif block.lang == "python":
        assert block.test, f"{block.where}: a python block names the test that runs it (test=PATH)"
        compile(block.code, block.where, "exec")
    elif block.lang == "json":
        json.loads(block.code)
    else:
        pytest.fail(f"{block.where}: no rule for ```{block.lang}: use sh, yaml, python, json or text")


def test_the_pages_hold_examples_of_every_kind() -> None:
    """The reader finds the blocks at all (a broken fence pattern would make every test above vacuous)."""
    kinds = {(b.lang, b.path.name) for b in BLOCKS}
    assert {("sh", "README.md"), ("python", "modules.md"), ("yaml", "flows.md"), ("json", "webhooks.md")} <= kinds
    assert len([w for w in commands() if w[0].endswith("baton")]) > 20


def test_a_deliberately_not_run_block_is_skipped_with_its_reason(tmp_path) -> None:
    from tests.support.doc_examples import page_blocks

    page = tmp_path / "page.md"
    page.write_text("# T\n\n<!-- not run: needs a Docker engine -->\n```sh\ndocker compose up\n```\n\n```sh\nbaton get ID\n```\n")
    first, second = page_blocks(page)
    assert (first.not_run, second.not_run) == ("needs a Docker engine", None)
    assert first.heading == "T" and first.line == 4


def test_every_curl_call_is_accepted_by_the_api(tmp_path) -> None:
    calls = [words for words in commands() if words[0] == "curl"]
    assert len(calls) >= 2
    app, store, broker = open_api(tmp_path, flows=(REPO / "flows.yaml").read_text())
    from fastapi.testclient import TestClient

    task_id = None
    try:
        with TestClient(app) as client:
            for words in calls:
                method, url, _, text = curl_request(words)
                path = "/" + url.split("/", 3)[3]
                body = json.loads(text)
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


def test_a_yaml_example_that_does_not_load_fails(tmp_path) -> None:
    """The yaml rule can fail: a step with a negative timeout is refused by the loader."""
    from common.errors import FlowError

    page = tmp_path / "page.md"
    page.write_text("# T\n\n```yaml step\n- name: a\n  normal: {module: m, command: c, timeout: -5}\n```\n")
    from tests.support.doc_examples import page_blocks

    [block] = page_blocks(page)
    with pytest.raises(FlowError, match="timeout"):
        check_yaml(Block(REPO / "README.md", block.line, block.lang, block.tags, None, block.code, "T"))


def test_the_yaml_loader_sees_a_whole_file() -> None:
    """`yaml flows` blocks are whole task types files, not fragments."""
    for block in (b for b in BLOCKS if b.lang == "yaml" and "flows" in b.tags):
        assert "task_types" in yaml.safe_load(block.code), block.where
