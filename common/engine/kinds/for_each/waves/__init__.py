"""Waves on a `for_each` step (docs/design/waves.md): its items in successive batches, with a
bake or an operator's pause between them and a failure budget per wave."""
