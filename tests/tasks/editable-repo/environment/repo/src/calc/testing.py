"""Fixtures for calc's tests, loaded as a pytest plugin by tests/conftest.py."""

import pytest


@pytest.fixture
def zero() -> int:
    return 0
