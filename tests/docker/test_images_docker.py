from __future__ import annotations

import secrets

import pytest

from assay._internal.runtime.images import DEFAULT_BASE_IMAGE, SETUP_FIX, ensure_image_present
from assay.errors import InfrastructureError


@pytest.mark.docker
def test_real_engine_default_image_present_and_missing_tag_refused() -> None:
    from assay._internal.runtime.docker import connect

    client = connect(timeout=10)
    try:
        # scripts/setup.sh (run by scripts/test.sh) builds and tags the default image.
        image_id = ensure_image_present(client, DEFAULT_BASE_IMAGE)
        assert image_id == client.api.inspect_image(DEFAULT_BASE_IMAGE)["Id"]
        missing = f"assay-base:absent-{secrets.token_hex(6)}"
        with pytest.raises(InfrastructureError) as info:
            ensure_image_present(client, missing)
        assert info.value.fix == SETUP_FIX
    finally:
        client.close()
