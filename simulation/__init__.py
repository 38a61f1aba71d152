"""The MirrorBench simulator: scenes, grid dynamics, rendering and the Gymnasium interface.

Plain Python (no Django). Importing the package registers ``MirrorBench-v2`` with Gymnasium.
"""

from gymnasium.envs.registration import register, registry

ENV_ID = "MirrorBench-v2"

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="simulation.env:MirrorBenchEnv")
