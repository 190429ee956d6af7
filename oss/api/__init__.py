"""The REST API of OSS (FastAPI), versioned under /api/v1. Built by `create_app` (app.py)."""

from oss.api.app import create_app

__all__ = ["create_app"]
