"""Read flows.yaml: YAML with lines -> schema and cross checks -> a FlowCatalog, or one FlowError
listing every problem found."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from common.errors import FlowError
from common.flows.build import build_catalog
from common.flows.catalog import FlowCatalog
from common.flows.checks import KnownCommands, cross_checks
from common.spec.problems import describe
from common.flows.messages import schema_problems
from common.spec.problems import ROOT, Problem, raise_problems
from common.flows.schema import FlowsFile
from common.flows.wide_numbers import wide_numbers
from common.flows.yaml_source import read_yaml


def load_flows(
    path: str | Path, known_commands: KnownCommands | None = None, *, all_modules: bool = True
) -> FlowCatalog:
    """Load and check a flows file.

    `known_commands` (module -> commands it serves), when given, also checks that every step
    names a module and command that exist. `all_modules=False` says it lists only some modules:
    a module checking at start-up that it serves what the flows ask of it passes just its own.
    """
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # tolerate a BOM some editors write
    except (OSError, UnicodeError) as error:
        raise FlowError([f"{path}:1: {ROOT}: cannot read the file: {error}{_where_hint(path, error)}"]) from error
    return parse_flows(text, str(path), known_commands, all_modules=all_modules)


def _where_hint(path: str | Path, error: Exception) -> str:
    """A missing file is most often a command run outside the folder that holds flows.yaml: say
    which folder a relative path was read from and which setting names the file."""
    if not isinstance(error, FileNotFoundError):
        return ""
    folder = "" if Path(path).is_absolute() else f" (read from {Path.cwd()})"
    return f"{folder}; set BATON_FLOWS_PATH to the flows file"


def parse_flows(
    text: str,
    filename: str = "flows.yaml",
    known_commands: KnownCommands | None = None,
    *,
    all_modules: bool = True,
) -> FlowCatalog:
    source = read_yaml(text)
    problems = list(source.problems)
    if not isinstance(source.data, dict):
        if not problems:  # a syntax error already says why there is no mapping
            problems.append(_not_a_mapping(source.data))
        raise_problems(filename, problems)
    wide = wide_numbers(source.data, source.lines)
    if wide:  # alone: the schema and the checks below would compare and build with numbers no store holds
        raise_problems(filename, problems + wide)
    spec = None
    try:
        spec = FlowsFile.model_validate(source.data)
    except ValidationError as error:
        found = schema_problems(error, FlowsFile, source.lines)
        problems += [problem for problem in found if problem.where not in source.unreadable]
    problems += cross_checks(source.data, source.lines, known_commands, all_modules=all_modules)
    raise_problems(filename, problems)
    assert spec is not None  # no problems means the schema accepted the file
    return build_catalog(spec)


def _not_a_mapping(data: object) -> Problem:
    if data is None:
        return Problem(1, ROOT, "the file is empty: it needs version and task_types")
    return Problem(1, ROOT, f"must be a mapping with version and task_types (got {describe(data)})")
