"""A `for_each` step's items from a module's command, a page at a time (docs/design/item-sources.md):
an extension of the for_each kind (docs/design/kind-extensions.md)."""
