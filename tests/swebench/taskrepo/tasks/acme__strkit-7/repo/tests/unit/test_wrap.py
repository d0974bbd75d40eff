from strkit import shorten


def test_short_text_is_unchanged():
    assert shorten("short", 10) == "short"


def test_cuts_at_a_word_boundary():
    assert shorten("a long sentence to cut", 10) == "a long..."
