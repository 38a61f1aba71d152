"""The tests that share a class's or a module's rows go to one xdist worker (tests/conftest.py),
so that the rows are made once."""

from types import SimpleNamespace

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


class _Item:
    """What ``_deal_order`` reads of a test: its id and whether it is marked ``waits``."""

    def __init__(self, nodeid: str, waits: bool) -> None:
        self.nodeid, self.waits = nodeid, waits

    def get_closest_marker(self, name: str) -> object:
        return "waits" if name == "waits" and self.waits else None


def test_groups_come_first_and_waiting_tests_are_spread_over_the_whole_run():
    from tests.conftest import _deal_order

    items = [
        *(_Item(f"tests/a.py::t{i}", False) for i in range(4)),
        *(_Item(f"tests/faults/f1.py::t{i}", True) for i in range(2)),
        _Item("tests/faults/f2.py::t0", True),
        *(_Item(f"tests/h.py::t{i}@rows-h", False) for i in range(2)),  # a group: sent whole
        *(_Item(f"tests/g.py::t{i}@rows-g", False) for i in range(5)),
        *(_Item(f"tests/b.py::t{i}", False) for i in range(4)),
        *(_Item(f"tests/c.py::t{i}", False) for i in range(4)),
    ]
    spread = [item.nodeid for item in _deal_order(items)]  # type: ignore[arg-type]
    assert sorted(spread) == sorted(item.nodeid for item in items)
    # The groups first, the largest first; then the tests alone in their order. 19 tests
    # besides the 3 waiting ones: one waiting test after each 4.75 of them (rounded up to a
    # whole unit), the groups counted too, so that the first starts among the groups.
    assert spread == [
        *(f"tests/g.py::t{i}@rows-g" for i in range(5)),
        "tests/faults/f1.py::t0",
        *(f"tests/h.py::t{i}@rows-h" for i in range(2)),
        *(f"tests/a.py::t{i}" for i in range(3)),
        "tests/faults/f1.py::t1",
        "tests/a.py::t3",
        *(f"tests/b.py::t{i}" for i in range(4)),
        "tests/faults/f2.py::t0",
        *(f"tests/c.py::t{i}" for i in range(4)),
    ]


def test_under_loadgroup_xdist_deals_the_tests_out_in_the_suites_order():
    from tests.conftest import _deal_in_suite_order

    controller = SimpleNamespace(option=SimpleNamespace(dist="loadgroup", loadscopereorder=True))
    _deal_in_suite_order(controller)  # type: ignore[arg-type]
    assert controller.option.loadscopereorder is False
    elsewhere = SimpleNamespace(option=SimpleNamespace(dist="load", loadscopereorder=True))
    _deal_in_suite_order(elsewhere)  # type: ignore[arg-type]
    assert elsewhere.option.loadscopereorder is True


def test_without_waiting_tests_the_order_is_kept():
    from tests.conftest import _deal_order

    items = [_Item(f"tests/a.py::t{i}", False) for i in range(3)]
    assert _deal_order(items) == items  # type: ignore[arg-type]
