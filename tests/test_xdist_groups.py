"""The tests that share a class's or a module's rows go to one xdist worker (tests/conftest.py),
so that the rows are made once."""

from tests.conftest import _group_shared_rows

SOURCE = """
import pytest

@pytest.fixture(scope="class")
def class_rows():
    return None

@pytest.fixture(scope="module")
def module_rows():
    return None

class TestShared:
    def test_a(self, class_rows):
        pass

    def test_b(self, class_rows):
        pass

class TestModuleWide:
    def test_c(self, module_rows):
        pass

def test_alone():
    pass

@pytest.mark.xdist_group("browser")
def test_in_a_group_already(module_rows):
    pass
"""


def groups(item) -> list[str]:
    return [str(mark.args[0]) for mark in item.iter_markers("xdist_group")]


def test_a_class_or_a_module_sharing_rows_is_one_group(pytester):
    items = {item.name: item for item in pytester.getitems(SOURCE)}
    for item in items.values():
        _group_shared_rows(item)
    module = items["test_a"].nodeid.split("::")[0].removesuffix(".py").replace("/", ".")
    assert groups(items["test_a"]) == groups(items["test_b"]) == [f"rows-{module}.TestShared"]
    assert groups(items["test_c"]) == [f"rows-{module}"]
    assert groups(items["test_alone"]) == []
    assert groups(items["test_in_a_group_already"]) == ["browser"]
