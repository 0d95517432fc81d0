"""The web console at `/console`, shipped with the API (no CDN, no build step).

The page needs no token; every call it makes carries the signed-in person's bearer token, so
it can do exactly what that token may do over the API.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

router = APIRouter(tags=["console"])

CONSOLE_DIR = Path(__file__).resolve().parent.parent / "console"
# Only these files are served: a name is looked up, never joined into a path.
FILES = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
# The page runs only its own script and talks only to this origin.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _file(name: str) -> FileResponse:
    media = FILES.get(name)
    if media is None:
        raise HTTPException(status_code=404)
    return FileResponse(CONSOLE_DIR / name, media_type=media, headers=HEADERS)


@router.get("/console", include_in_schema=False)
@router.get("/console/", include_in_schema=False)
async def console_page() -> FileResponse:
    """The console's single page; its views are chosen by the URL's fragment."""
    return _file("index.html")


@router.get("/console/{name}", include_in_schema=False)
async def console_asset(name: str) -> FileResponse:
    return _file(name)
