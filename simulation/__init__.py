"""The MirrorBench simulator: scenes, grid dynamics, rendering and the Gymnasium interface.

Plain Python (no Django). Importing the package registers ``ENV_ID`` (``MirrorBench-v3``) with
Gymnasium; ``gymnasium.register_envs(simulation)`` marks that import as used for linters.

The registration does not import Gymnasium (and numpy with it, about 0.25 s of CPU): the site's
processes import this package for its scene catalogue, and most of them (web processes,
``manage.py`` commands, beat) never make an environment. When Gymnasium is already loaded the
environment is registered at once; otherwise it is registered the moment Gymnasium's registry
loads, whatever imports it and whenever (``_RegisterWhenGymnasiumLoads``).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

from simulation.versions import BENCHMARK_VERSION

ENV_ID = f"MirrorBench-{BENCHMARK_VERSION}"
"""The Gymnasium id: its ``-vN`` suffix is the benchmark (protocol) version."""
ENTRY_POINT = "simulation.env:MirrorBenchEnv"
REGISTRY_MODULE = "gymnasium.envs.registration"


def _register(registration: ModuleType) -> None:
    """Register ``ENV_ID`` in Gymnasium's registry module, once."""
    if ENV_ID not in registration.registry:
        registration.register(id=ENV_ID, entry_point=ENTRY_POINT)


class _RegisterWhenGymnasiumLoads(MetaPathFinder):
    """An import hook that registers ``ENV_ID`` right after Gymnasium's registry module has run.

    It finds nothing itself: for ``gymnasium.envs.registration`` it takes the spec the other
    finders give, and runs the registration after that module's own code. It then leaves
    ``sys.meta_path``, so it acts once and costs nothing afterwards.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != REGISTRY_MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec  # not a module this hook can follow: the import goes on without it
        loader = spec.loader
        run = loader.exec_module

        def run_then_register(module: ModuleType) -> None:
            run(module)
            _register(module)

        loader.exec_module = run_then_register  # type: ignore[method-assign]
        return spec


if REGISTRY_MODULE in sys.modules:
    _register(sys.modules[REGISTRY_MODULE])
else:
    sys.meta_path.insert(0, _RegisterWhenGymnasiumLoads())
