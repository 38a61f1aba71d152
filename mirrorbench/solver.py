"""The solver: plays a sample's episode through the engine, with the eval's Inspect model.

The engine's runner (``evaluation.runner.run_episode``) plays it as a ``mirrorbench run``
does: the same prompts (``evaluation.prompts``), images, history, budget, feedback and answer
parser, through ``evaluation.agents.ModelAgent``, whose model client is Inspect's model
(``mirrorbench.client``). The episode runs in a worker thread, since the engine is synchronous;
each step's model call goes back to the event loop. Frames come from one render pool per
process, shared by every sample (``evaluation.render_pool``).
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from inspect_ai.log import transcript
from inspect_ai.model import get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from evaluation.agents import ModelAgent
from evaluation.render_pool import RenderPool
from evaluation.runner import FrameSource, run_episode
from mirrorbench.client import InspectModelClient
from simulation.catalogue import MAIN, get_scene
from simulation.dynamics import Action
from simulation.renderer import DEFAULT_SIZE

EPISODE_KEY = "mirrorbench:episode"
"""The sample store's key for the episode as the engine played it: its status, distances and
each step's option, execution and hand cell (the scorer reads it; the log keeps it)."""

_pool_lock = threading.Lock()
_pool: RenderPool | None = None


def shared_render_pool(threads: int | None = None) -> RenderPool:
    """Return this process's render pool for Inspect samples, made on first use with
    ``threads`` renderers (default one per core); it closes when the process ends."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = RenderPool(threads)
        return _pool


def step_claim(step: dict[str, Any]) -> dict[str, Any]:
    """Return what a step's record says happened (not the response: the model events hold it)."""
    return {
        "index": step["index"],
        "option": step["option"],
        "parse_error": step["parse_error"],
        "executed": step["executed"],
        "distance_steps": step["distance_steps"],
        "hand_cell": step["hand_cell"],
    }


def _step_message(step: dict[str, Any]) -> str:
    option = step["option"]
    if option is None:
        move = f"no move (bad response: {step['parse_error']})"
    else:
        action = Action(option).name.lower()
        move = f"option {option} ({action}), " + (
            "executed" if step["executed"] else "refused: collision"
        )
    return f"step {step['index']}: {move}; distance {step['distance_steps']} steps"


def _stepped(state: TaskState, steps: list[dict[str, Any]], step: dict[str, Any]) -> None:
    """Record a step as it is taken (on the event loop): in the store and the transcript."""
    steps.append(step_claim(step))
    state.store.set(EPISODE_KEY, {"status": "running", "steps": steps})
    transcript().info(_step_message(step), source="mirrorbench")


@solver
def play_episode(
    image_size: int = DEFAULT_SIZE, image_history: int = 1, render_threads: int | None = None
) -> Solver:
    """Play the sample's episode (its ``scene`` and ``level`` metadata) with the eval's model.

    Args:
        image_size: Frame size in pixels (the protocol's is 1024).
        image_history: Previous frames shown with the current one (the protocol's is 1).
        render_threads: Renderers of this process's render pool, made by the first sample
            (default one per core).
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        scene = get_scene(state.metadata["scene"], state.metadata.get("condition", MAIN))
        level = int(state.metadata["level"])
        client = InspectModelClient(get_model(), state, scene_id=scene.id, level=level)
        agent = ModelAgent(client, image_history=image_history)
        frames = FrameSource(image_size, pool=shared_render_pool(render_threads))
        steps: list[dict[str, Any]] = []

        def on_step(step: dict[str, Any]) -> None:
            anyio.from_thread.run_sync(_stepped, state, steps, step)

        state.messages = []
        record = await anyio.to_thread.run_sync(
            partial(
                run_episode,
                scene,
                level,
                agent,
                frames=frames,
                image_size=image_size,
                on_step=on_step,
            ),
            # A limiter of its own: Inspect bounds how many samples run at once, not anyio's
            # default 40 worker threads.
            limiter=anyio.CapacityLimiter(1),
        )
        state.store.set(
            EPISODE_KEY,
            {
                "status": record["status"],
                "error": record["error"],
                "success": record["success"],
                "distances": record["distances"],
                "steps": steps,
            },
        )
        state.completed = True
        return state

    return solve
