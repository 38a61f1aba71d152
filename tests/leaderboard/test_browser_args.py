"""The suite's chromium: the headless shell, with Playwright's own switches, and no page of a
browser's own user interface loaded for each window."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.leaderboard.browser import CHROMIUM, CHROMIUM_ARGS
from tests.proc import descendants


def _browser_command_line() -> list[str]:
    """The command line of the chromium that Playwright started for this process."""
    for pid in descendants(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv if a]
        if "--remote-debugging-pipe" in args and not any(a.startswith("--type=") for a in args):
            return args
    raise AssertionError("no chromium was started by this process")


def test_the_browser_is_the_headless_shell_with_playwrights_switches_and_ours(browser):
    args = _browser_command_line()
    assert args[0] == str(CHROMIUM)
    assert {"--headless", "--disable-background-networking", *CHROMIUM_ARGS} <= set(args)


def test_a_new_window_loads_no_page_of_the_browsers_own_interface(browser):
    context = browser.new_context()
    session = browser.new_browser_cdp_session()
    try:
        context.new_page().goto("about:blank")
        deadline = time.monotonic() + 1.5
        interface: list[str] = []
        while not interface and time.monotonic() < deadline:
            targets = session.send("Target.getTargets")["targetInfos"]
            interface = [t["url"] for t in targets if t["type"] == "browser_ui"]
            time.sleep(0.1)
    finally:
        session.detach()
        context.close()
    assert interface == []
