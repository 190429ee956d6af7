"""The exit-code table of docs/reference/cli.md of the CLI is the one the code uses: every EXIT_* constant is a
row, and no row names a code the commands do not return."""

from __future__ import annotations

import re

from oss.cli import common as cli_common
from tests.support.cluster import REPO


def _section() -> str:
    return (REPO / "docs" / "reference" / "cli.md").read_text()


def test_the_exit_code_table_is_the_code_s() -> None:
    rows = {int(code) for code in re.findall(r"^\| (\d) \|", _section(), flags=re.MULTILINE)}
    constants = {value for name, value in vars(cli_common).items() if name.startswith("EXIT_")}
    assert rows == constants == {0, 1, 2, 3, 4, 5}


def test_the_module_doc_lists_the_same_codes() -> None:
    """oss/cli/__init__.py's docstring repeats the table for readers of the code: the same codes."""
    from oss import cli

    documented = {int(code) for code in re.findall(r"^  (\d)  ", cli.__doc__ or "", flags=re.MULTILINE)}
    assert documented == {0, 1, 2, 3, 4, 5}
