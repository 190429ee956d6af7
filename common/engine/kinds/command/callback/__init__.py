"""A command that waits for another system's callback (docs/design/callbacks.md): its token, its
parked run, and the changes that end the wait."""
