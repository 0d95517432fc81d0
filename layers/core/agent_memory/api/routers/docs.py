"""The API's docs page at `/docs`: Swagger UI from `fastapi-offline`, served without a CDN."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import HTMLResponse, Response

router = APIRouter(tags=["docs"])

# Only these files are served: a name is looked up, never joined into a path.
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
HEADERS = {
    # Swagger UI sets style attributes on its elements; scripts are this origin's only.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>agent-memory API</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
"""
# The token typed into "Authorize" is kept for the tab only (persistAuthorization off).
INIT = """window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  displayOperationId: false,
  tryItOutEnabled: false,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout"
});
"""


def _asset(name: str) -> bytes:
    return files("fastapi_offline").joinpath("static", name).read_bytes()


@router.get("/docs", include_in_schema=False)
async def docs_page() -> HTMLResponse:
    return HTMLResponse(PAGE, headers=HEADERS)


@router.get("/docs/init.js", include_in_schema=False)
async def docs_init() -> Response:
    return Response(INIT, media_type="text/javascript; charset=utf-8", headers=HEADERS)


@router.get("/docs/assets/{name}", include_in_schema=False)
async def docs_asset(name: str) -> Response:
    media = ASSETS.get(name)
    if media is None:
        raise HTTPException(status_code=404)
    cache: dict[str, Any] = {"Cache-Control": "public, max-age=86400"}
    return Response(_asset(name), media_type=media, headers=HEADERS | cache)
