"""Text a client writes as a number or a status is read in ASCII only: other scripts' digits
('٣' is 3 to int()), superscripts ('²' is a digit to str.isdigit()), '1_000' and case-folding
tricks ('ſuccess'.upper() is 'SUCCESS') are refused, without echoing the text."""

from __future__ import annotations

import pytest

from common.engine.states import TaskStatus, parse_task_status
from oss.services.times import to_epoch

OTHER_DIGITS = ["٣", "²", "１", "3²", "٣٣", "1_0", "ſuccess", "ＳＵＣＣＥＳＳ"]


@pytest.mark.parametrize("text", OTHER_DIGITS)
def test_a_status_is_a_code_or_a_name_in_ascii(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_task_status(text)
    assert text not in str(refused.value)


def test_the_ascii_forms_are_read() -> None:
    assert parse_task_status("4") is parse_task_status(" rolled_back ") is TaskStatus.ROLLED_BACK


@pytest.mark.parametrize("text", ["١٧٩٥٠٠٠٠٠٠", "1_795_000_000", "２０３０-01-01", "٢٠٣٠-01-01T00:00:00", "nan", "inf"])
def test_a_moment_is_ascii_epoch_seconds_or_iso_8601(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        to_epoch(text)
    assert text not in str(refused.value)


def test_the_ascii_moments_are_read() -> None:
    assert to_epoch("1795000000") == to_epoch("1795000000.0") == to_epoch(" 1.795e9 ") == 1_795_000_000.0
    assert to_epoch("2030-01-01T00:00:00Z") == to_epoch("2030-01-01T00:00:00") == 1_893_456_000.0


@pytest.mark.parametrize(
    "args",
    [
        ["submit", "demo", "--priority", "٣"],
        ["submit", "demo", "--priority", "1_0"],
        ["schedules", "add", "p", "demo", "--every", "٦٠"],
        ["schedules", "add", "p", "demo", "--every", "6_0"],
        ["list", "--limit", "１"],
        ["hosts", "add", "h1", "--cpu", "²", "--memory-mb", "1", "--storage-gb", "1"],
    ],
)  # fmt: skip
def test_the_cli_reads_numbers_in_ascii_only(args: list[str]) -> None:
    from click.testing import CliRunner

    from oss.cli import main

    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "must be a number in ASCII digits" in result.output, result.output
    typed = next(a for a in args if not a.isascii() or "_" in a)
    assert typed not in result.output  # the option is named, what was typed is not echoed
