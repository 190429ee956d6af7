"""flows.yaml: the task types users define, loaded and checked with the line of every problem.

Layout, one job per file: yaml_source (YAML -> data + lines, duplicate keys), schema (the format
as pydantic models), messages (pydantic errors -> readable problems), checks (rules across
values), parameter_checks (the same for `parameters:` declarations), build (models -> Step
templates and parameter schemas), catalog (lookups), parameters (a job's parameters checked
against a schema), loader (the pipeline).

Design: docs/design/graph-and-routing.md, "The flow graph".
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Where each public name lives. They are imported on first use, so that a module needing one
# small piece (common.spec.problems, say) does not load the whole pipeline: pydantic models,
# the YAML reader, every check.
_HOMES = {
    "FlowCatalog": "catalog",
    "FlowDefinition": "catalog",
    "load_flows": "loader",
    "parse_flows": "loader",
    "FieldError": "parameters",
    "ParameterCheck": "parameters",
    "ParameterField": "parameters",
    "ParameterSchema": "parameters",
    "validate_parameters": "parameters",
}

__all__ = sorted(_HOMES)

if TYPE_CHECKING:
    from common.flows.catalog import FlowCatalog, FlowDefinition
    from common.flows.loader import load_flows, parse_flows
    from common.flows.parameters import (
        FieldError,
        ParameterCheck,
        ParameterField,
        ParameterSchema,
        validate_parameters,
    )


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'common.flows' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"common.flows.{home}"), name)
    globals()[name] = value
    return value
