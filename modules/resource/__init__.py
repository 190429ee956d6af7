"""The resource module: one process (or container) consuming the `resource` queue."""
