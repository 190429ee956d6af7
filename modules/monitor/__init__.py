"""The monitor module: one process (or container) consuming the `monitor` queue."""
