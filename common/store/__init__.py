"""The task store: a port (`TaskStore`) and its adapters (SQLite embedded, MongoDB production)."""
