"""A test whose real part is missing skips on a developer's machine and fails under CI."""

import pytest

from tests.parts import import_part, require_part, under_ci

HINT = "apt-get install it"


@pytest.fixture
def developer(monkeypatch):
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture(params=["true", "1", "TRUE"])
def ci(monkeypatch, request):
    monkeypatch.setenv("CI", request.param)


def test_a_part_that_is_here_lets_the_test_go_on(ci):
    require_part("redis-server", True, HINT)


def test_a_missing_part_skips_the_test_on_a_developers_machine_and_says_how_to_install_it(
    developer,
):
    with pytest.raises(pytest.skip.Exception, match="redis-server is missing: apt-get install it"):
        require_part("redis-server", False, HINT)


@pytest.mark.parametrize("value", ["", "false", "0"])
def test_ci_set_to_anything_but_true_or_1_is_a_developers_machine(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    assert not under_ci()
    with pytest.raises(pytest.skip.Exception):
        require_part("redis-server", False, HINT)


def test_a_missing_part_fails_the_test_under_ci(ci):
    assert under_ci()
    with pytest.raises(pytest.fail.Exception, match="redis-server is missing: apt-get install it"):
        require_part("redis-server", False, HINT)


def test_a_module_that_imports_is_returned(ci):
    assert import_part("tests.parts", "the suite", HINT).require_part is require_part


def test_a_module_that_cannot_be_imported_is_a_missing_part(developer, monkeypatch):
    with pytest.raises(pytest.skip.Exception, match=r"No module named 'tests\.no_such_part'"):
        import_part("tests.no_such_part", "no such part", HINT)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no such part is missing"):
        import_part("tests.no_such_part", "no such part", HINT)


def test_under_ci_a_module_missing_its_part_is_an_error_of_the_run_not_a_skip(
    pytester, monkeypatch
):
    pytester.makepyfile(
        test_needs_a_part="""
        from tests.parts import import_part

        import_part("tests.no_such_part", "no such part", "install it")

        def test_it():
            pass
        """
    )
    monkeypatch.delenv("CI", raising=False)
    pytester.runpytest_inprocess("-p", "no:django").assert_outcomes(skipped=1)
    monkeypatch.setenv("CI", "true")
    pytester.runpytest_inprocess("-p", "no:django").assert_outcomes(errors=1)
