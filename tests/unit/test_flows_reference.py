"""docs/reference/flows-yaml.md names every key flows.yaml accepts: each field of the loader's
schema classes (common/flows/schema.py) appears there as `key`."""

from __future__ import annotations

from common.flows import schema
from tests.support.doc_examples import DOCS

SPECS = (schema.FlowsFile, schema.DefaultsSpec, schema.TaskTypeSpec, schema.StepSpec, schema.PhaseSpec,
         schema.BackoffSpec, schema.LockSpec, schema.ParameterSpec, schema.NotifySpec)


def test_every_key_of_the_schema_is_in_the_reference() -> None:
    page = (DOCS / "reference" / "flows-yaml.md").read_text()
    missing = [f"{spec.__name__}.{name}" for spec in SPECS for name in spec.model_fields if f"`{name}`" not in page]
    assert not missing, missing
