"""What a play is: who plays, one episode as the player sees it, and the errors a play raises."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from leaderboard.models import Scene
from simulation.catalogue import Vec3


class PlayNotFound(Exception):
    """No episode of this player has that reference (unknown, someone else's, or expired)."""


class PlayRefused(Exception):
    """An answer the episode cannot take: not for the current step, or after the end."""


@dataclass(frozen=True)
class Player:
    """Who plays: a signed-in user, or an anonymous visitor known by their session."""

    user: Any | None
    session: str = ""
    """SHA-256 of the anonymous visitor's session key (empty for a signed-in user)."""

    @classmethod
    def anonymous(cls, session_key: str) -> Player:
        return cls(None, hashlib.sha256(session_key.encode()).hexdigest())


@dataclass(frozen=True)
class PlayState:
    """One episode as the player sees it now, with the frame of every view registered."""

    ref: str
    """``e<id>`` for a stored episode, ``p<hex>`` for an unstored one."""
    scene: Scene
    level: int
    options: list[int]
    executed: list[bool]
    cells: list[Vec3]
    """The start, then the hand's cell after each step."""
    distances: list[int]
    done: bool
    success: bool
    keys: list[str]
    """The frame key of each view in ``cells``."""
    episode_id: int | None = None
    """The stored episode (signed-in players), None for an unstored one."""
    practice: bool = False
    """A signed-in player's replay of a scene and level already stored."""
    metrics: dict[str, float] | None = None

    @property
    def index(self) -> int:
        """The step the next answer is for (0-based): the steps taken so far."""
        return len(self.options)

    @property
    def stored(self) -> bool:
        return self.episode_id is not None
