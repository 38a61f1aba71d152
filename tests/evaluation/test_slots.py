import threading
import time

import pytest

from evaluation.slots import Admission, Closed, RequestSlots


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.001)


def test_request_slots_refuse_a_size_below_one():
    with pytest.raises(ValueError, match="at least 1"):
        RequestSlots(0)


def test_no_more_than_n_callers_hold_a_slot_at_once():
    slots = RequestSlots(3)
    lock = threading.Lock()
    holding = most = 0

    def call():
        nonlocal holding, most
        with slots.hold():
            with lock:
                holding += 1
                most = max(most, holding)
            time.sleep(0.005)
            with lock:
                holding -= 1

    threads = [threading.Thread(target=call) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 3 and holding == 0 and slots.waiting == 0


def test_a_freed_slot_goes_to_the_waiter_with_the_most_steps_left_equal_ones_in_order():
    slots = RequestSlots(1)
    release = threading.Event()
    order: list[str] = []

    def holder():
        with slots.hold(0):
            release.wait()

    first = threading.Thread(target=holder)
    first.start()
    wait_until(lambda: slots._free == 0)

    def waiter(name, left):
        with slots.hold(left):
            order.append(name)

    threads = []
    for name, left in [("few", 2), ("many-a", 9), ("some", 5), ("many-b", 9)]:
        t = threading.Thread(target=waiter, args=(name, left))
        t.start()
        threads.append(t)
        count = len(threads)
        wait_until(lambda: slots.waiting == count)  # noqa: B023 (called at once)
    release.set()
    for t in [first, *threads]:
        t.join()
    assert order == ["many-a", "many-b", "some", "few"]


def test_on_idle_is_called_only_when_a_slot_is_returned_with_nobody_waiting():
    called: list[int] = []
    slots = RequestSlots(1, on_idle=lambda: called.append(slots.waiting))
    release = threading.Event()

    def holder():
        with slots.hold():
            release.wait()

    first = threading.Thread(target=holder)
    first.start()
    wait_until(lambda: slots._free == 0)

    def waiter():
        with slots.hold():
            pass

    second = threading.Thread(target=waiter)
    second.start()
    wait_until(lambda: slots.waiting == 1)
    release.set()
    first.join()
    second.join()
    # The first return handed the slot over (no call); the second found nobody waiting.
    assert called == [0]


def test_a_slot_is_given_back_when_the_call_raises():
    slots = RequestSlots(1)
    with pytest.raises(RuntimeError), slots.hold():
        raise RuntimeError("provider down")
    with slots.hold():  # would block for ever if the slot were lost
        pass


def enter_in_thread(admission, index, entered):
    def go():
        try:
            admission.enter(index)
            entered.append(index)
        except Closed:
            entered.append(("closed", index))

    t = threading.Thread(target=go)
    t.start()
    return t


def test_admission_lets_episodes_in_by_their_order_first_at_a_time():
    admission = Admission(first=2, most=4, total=6)
    entered: list = []
    threads = [enter_in_thread(admission, i, entered) for i in range(6)]
    wait_until(lambda: len(entered) == 2)
    assert sorted(entered) == [0, 1] and admission.open_limit == 2
    admission.finished()
    wait_until(lambda: len(entered) == 3)
    assert entered[-1] == 2
    admission.close()
    for t in threads:
        t.join()
    assert sorted(e[1] for e in entered if isinstance(e, tuple)) == [3, 4, 5]


def test_admission_grows_by_one_up_to_most_then_all_the_rest_once_they_fit():
    admission = Admission(first=2, most=3, total=8)
    admission.grow()
    assert admission.open_limit == 3
    admission.grow()  # three may be open: the most allowed
    assert admission.open_limit == 3
    admission.finished()  # the next one takes the place of the finished one
    assert admission.open_limit == 3

    admission = Admission(first=1, most=4, total=6)
    admission.grow()
    assert admission.open_limit == 2  # six left: more than ``most``, one more
    admission.finished()
    admission.finished()
    admission.grow()  # four left, all of which fit under ``most``: they all open
    entered: list = []
    threads = [enter_in_thread(admission, i, entered) for i in range(6)]
    for t in threads:
        t.join()
    assert sorted(entered) == list(range(6)) and admission.open_limit == 4


def test_admission_never_opens_more_than_most_even_if_first_is_larger():
    assert Admission(first=10, most=4, total=20).open_limit == 4
    assert Admission(first=0, most=0, total=3).open_limit == 1
