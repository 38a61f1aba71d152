"""Shared test set-up: headless rendering and a throwaway data directory."""

import os
import tempfile

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
os.environ.setdefault("MIRRORBENCH_DATA_DIR", tempfile.mkdtemp(prefix="mirrorbench-test-"))
