"""The API key routes as the official Python client of the real API sees them."""

from __future__ import annotations

import pytest

neon_api = pytest.importorskip("neon_api")
from neon_api import NeonAPI, NeonAPIError  # noqa: E402

from tests.api.conftest import Live  # noqa: E402


def test_the_official_client_lists_creates_and_revokes_keys(live: Live) -> None:
    neon = NeonAPI(live.key, base_url=f"{live.base}/api/v2/")
    created = neon.api_key_create(key_name="from-the-client")
    assert created.name == "from-the-client" and created.key.startswith("sim_")
    listed = neon.api_keys()
    assert created.id in {k.id for k in listed}
    assert all(not hasattr(k, "key") for k in listed)  # a secret is shown once, at creation
    other = NeonAPI(created.key, base_url=f"{live.base}/api/v2/")
    assert other.projects() is not None  # the new key works
    revoked = neon.api_key_revoke(created.id)
    assert revoked.revoked is True and revoked.id == created.id
    with pytest.raises(NeonAPIError):
        other.projects()  # refused at once
    assert created.id not in {k.id for k in neon.api_keys()}
