"""`/docs` works without a network: the page and every file it loads come from the server."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

import httpx

from tests.api.conftest import Live

#: src= and href= attributes, and the document Swagger UI is told to load (`url: '...'`)
REFERENCE = re.compile(r"""(?:src|href)="([^"]+)"|\burl:\s*'([^']+)'""")

EXPECTED_TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png",
                  ".json": "application/json"}


def test_docs_page_and_every_asset_come_from_the_server(live: Live) -> None:
    with httpx.Client(base_url=live.base, timeout=10) as http:
        page = http.get("/docs")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        references = [a or b for a, b in REFERENCE.findall(page.text)]
        # the stylesheet, the icon, Swagger UI's script and the OpenAPI document
        assert len(references) == 4, references
        for ref in references:
            url = urlsplit(urljoin(live.base + "/docs", ref))
            assert (url.scheme, url.netloc) == ("http", f"127.0.0.1:{live.port}"), (
                f"/docs loads {ref} from elsewhere: a browser without a network would show nothing")
            answer = http.get(url.path)
            assert answer.status_code == 200, ref
            assert len(answer.content) > 100, ref
            suffix = url.path[url.path.rfind("."):]
            assert EXPECTED_TYPES[suffix] in answer.headers["content-type"], ref
        assert "https://" not in page.text and "//cdn" not in page.text


def test_swagger_ui_can_read_the_openapi_version(live: Live) -> None:
    """Swagger UI 5 renders OpenAPI 3.1, the version FastAPI writes; 4.x shows an error."""
    with httpx.Client(base_url=live.base, timeout=10) as http:
        doc = http.get("/openapi.json").json()
        script = http.get("/docs/assets/swagger-ui-bundle.js").text
    assert doc["openapi"].startswith("3.1")
    [major] = re.findall(r'PACKAGE_VERSION:"(\d+)\.\d+\.\d+"', script)  # Swagger UI's own build info
    assert int(major) >= 5
    assert "isOAS31" in script
