"""The MirrorBench simulator: scenes, grid dynamics, rendering and the Gymnasium interface.

Plain Python (no Django). Importing the package registers ``ENV_ID`` (``MirrorBench-v3``) with
Gymnasium; ``gymnasium.register_envs(simulation)`` marks that import as used for linters.
"""

from gymnasium.envs.registration import register, registry

from simulation.versions import BENCHMARK_VERSION

ENV_ID = f"MirrorBench-{BENCHMARK_VERSION}"
"""The Gymnasium id: its ``-vN`` suffix is the benchmark (protocol) version."""

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="simulation.env:MirrorBenchEnv")
