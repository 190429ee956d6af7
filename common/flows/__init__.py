"""flows.yaml: the task types users define, loaded and checked with the line of every problem.

Layout, one job per file: yaml_source (YAML -> data + lines, duplicate keys), schema (the format
as pydantic models), messages (pydantic errors -> readable problems), checks (rules across
values), parameter_checks (the same for `parameters:` declarations), build (models -> Step
templates and parameter schemas), catalog (lookups), parameters (a job's parameters checked
against a schema), loader (the pipeline).
"""

from common.flows.catalog import FlowCatalog, FlowDefinition
from common.flows.loader import load_flows, parse_flows
from common.flows.parameters import (
    FieldError,
    ParameterCheck,
    ParameterField,
    ParameterSchema,
    validate_parameters,
)

__all__ = [
    "FieldError",
    "FlowCatalog",
    "FlowDefinition",
    "ParameterCheck",
    "ParameterField",
    "ParameterSchema",
    "load_flows",
    "parse_flows",
    "validate_parameters",
]
