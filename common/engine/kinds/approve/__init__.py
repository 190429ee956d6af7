"""An approval step (docs/guide/approvals.md): the flow waits, holding no slot, until enough
distinct people approve, or one rejects."""
