"""The web console: static HTML, CSS and plain JavaScript modules under static/, served at
/console/ by the OSS app. The page calls the /api/v1 endpoints with fetch like any client, so
it sees only what the API shows (secrets already masked) and holds no server-side state.

The files are served with a Content-Security-Policy that allows scripts and styles from this
origin only: the page never uses inline script or innerHTML, and the policy keeps it that way
should a value ever slip into the DOM as markup.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONSOLE_PATH = "/console"
STATIC_DIR = Path(__file__).parent / "static"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # The files are tiny: always revalidate, so an upgraded OSS never runs yesterday's script.
    "Cache-Control": "no-cache",
}


class _WithHeaders:
    """Adds SECURITY_HEADERS to every answer of the wrapped ASGI app."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


def mount_console(app: FastAPI) -> None:
    """Serve the console at /console/ and send / there. Neither is part of the OpenAPI document."""
    static = StaticFiles(directory=STATIC_DIR, html=True)
    app.mount(CONSOLE_PATH, _WithHeaders(static), name="console")

    @app.get("/", include_in_schema=False)
    def to_console() -> RedirectResponse:
        return RedirectResponse(f"{CONSOLE_PATH}/", status_code=307)
