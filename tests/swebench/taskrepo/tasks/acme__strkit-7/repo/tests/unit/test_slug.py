import pytest
from strkit import slugify


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("python", "python"),
        ("snake_case", "snake-case"),
        ("CamelCase", "camelcase"),
    ],
)
def test_slug(text, expected):
    assert slugify(text) == expected


def test_custom_separator():
    assert slugify("snake_case", sep="_") == "snake_case"


def test_non_ascii_is_transliterated():
    assert slugify("Caf\u00e9") == "cafe"
