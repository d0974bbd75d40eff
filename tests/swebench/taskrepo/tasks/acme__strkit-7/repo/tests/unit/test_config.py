from strkit import config


def test_locale_comes_from_the_environment():
    # The project's CI (and so the eval script) runs the tests with STRKIT_LOCALE=C.
    assert config.locale() == "C"
