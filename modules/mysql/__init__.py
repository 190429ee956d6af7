"""The mysql module: one process (or container) consuming the `mysql` queue."""
