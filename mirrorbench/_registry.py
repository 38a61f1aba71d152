"""What Inspect loads from the ``inspect_ai`` entry point: the task and the model provider.

Inspect names a package's task ``<package>/<task>`` when the package is installed; from an
editable install (``make install``) it names it after the function alone, since the
distribution (``mirrorbench-msr``) is not called after the package. There the task is
registered again under its full name, so ``mirrorbench/mirror_test`` resolves either way.
"""

from __future__ import annotations

import inspect

from inspect_ai import task
from inspect_ai.util import registry_info

from mirrorbench.provider import scripted_provider
from mirrorbench.task import TASK_NAME
from mirrorbench.task import mirror_test as _mirror_test

mirror_test = (
    _mirror_test
    if registry_info(_mirror_test).name == TASK_NAME
    else task(name=TASK_NAME)(inspect.unwrap(_mirror_test))
)

__all__ = ["mirror_test", "scripted_provider"]
