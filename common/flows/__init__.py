"""flows.yaml: the task types users define, loaded and checked with the line of every problem.

Layout, one job per file: yaml_source (YAML -> data + lines, duplicate keys), schema (the format
as pydantic models), messages (pydantic errors -> readable problems), checks (rules across
values), build (models -> Step templates), catalog (lookups), loader (the pipeline).
"""

from common.flows.catalog import FlowCatalog, FlowDefinition
from common.flows.loader import load_flows, parse_flows

__all__ = ["FlowCatalog", "FlowDefinition", "load_flows", "parse_flows"]
