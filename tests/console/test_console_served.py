"""The console's files as OSS serves them (TestClient, no browser): where they are, their
headers, and what they must never contain or do (inline script, outside URLs, markup built
from data, a token, task data)."""

from __future__ import annotations

import re

import pytest

from oss.console import SECURITY_HEADERS, STATIC_DIR
from tests.api.support import OPERATOR, READER, SECRET, SUBMITTER

FILES = sorted(p.name for p in STATIC_DIR.iterdir() if p.is_file())
SCRIPTS = [name for name in FILES if name.endswith(".js")]


def test_the_root_redirects_to_the_console(api):
    response = api.client.get("/", follow_redirects=False)
    assert response.status_code in (302, 307) and response.headers["location"] == "/console/"
    assert (
        api.client.get("/console", follow_redirects=False).headers["location"].endswith("/console/")
    )


def test_the_page_is_served_without_a_token_with_its_security_headers(api):
    response = api.client.get("/console/")  # no Authorization: the page holds no data
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert '<script type="module" src="main.js"></script>' in response.text


@pytest.mark.parametrize("name", FILES)
def test_every_file_is_served_with_its_type(api, name):
    response = api.client.get(f"/console/{name}")
    assert response.status_code == 200
    kind = {"html": "text/html", "css": "text/css", "js": "javascript"}[name.rsplit(".", 1)[1]]
    assert kind in response.headers["content-type"]
    assert response.headers["x-content-type-options"] == "nosniff"


def test_every_module_a_script_imports_is_there(api):
    imported = {m for name in SCRIPTS for m in re.findall(r'from "\./([\w-]+\.js)"', read(name))}
    assert imported and imported <= set(SCRIPTS)
    assert set(SCRIPTS) - imported == {"main.js"}  # nothing lying around unused


def test_nothing_but_the_static_files_is_served(api):
    for path in (
        "/console/__init__.py",
        "/console/../api/app.py",
        "/console/%2e%2e/__init__.py",
        "/console/nope.js",
    ):
        assert api.client.get(path).status_code == 404, path


def test_the_page_has_no_inline_script_style_or_handlers():
    html = read("index.html")
    assert re.findall(r"<script(?![^>]*\bsrc=)", html) == []
    assert re.search(r"\son\w+\s*=", html) is None
    assert re.search(r"\sstyle\s*=", html) is None


@pytest.mark.parametrize("name", FILES)
def test_nothing_is_fetched_from_outside_this_server(name):
    # Offline machines, and no third party sees who uses the console. The SVG namespace is a
    # name (createElementNS), never fetched: the only URL-shaped text allowed.
    text = read(name).replace('"http://www.w3.org/2000/svg"', '""')
    assert re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", text, re.IGNORECASE) is None


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_never_build_markup_from_strings(name):
    # Parameters and messages are user input: every value goes in with textContent.
    text = read(name)
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
    ):
        assert sink not in text, f"{name} uses {sink}"


def test_the_token_is_kept_in_session_storage_and_sent_as_a_bearer_header():
    api_js = read("api.js")
    assert "sessionStorage" in api_js and "localStorage" not in api_js
    assert "Authorization = `Bearer ${secret}`" in api_js
    for name in SCRIPTS:  # and never put in a URL
        assert not re.search(r"[?&]token=|access_token", read(name)), name


def test_no_secret_or_task_data_is_in_what_the_console_serves(api):
    task_id = api.create(parameters={"name": "db1", "admin_password": SECRET})["task_id"]
    served = "".join(api.client.get(f"/console/{name}").text for name in ["", *FILES])
    for value in (SECRET, task_id, OPERATOR, SUBMITTER, READER):
        assert value not in served


def test_the_console_is_not_part_of_the_api_document(api):
    paths = api.get("/api/v1/openapi.json").json()["paths"]
    assert not [p for p in paths if p == "/" or p.startswith("/console")]


def read(name: str) -> str:
    return (STATIC_DIR / name).read_text()
