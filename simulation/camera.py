"""The camera behind the body: where it stands, where it looks, its field of view."""

from __future__ import annotations

import math

import numpy as np

CAMERA_EYE = (-1.1, 0.0, 2.0)


CAMERA_TARGET = (0.0, 0.0, 1.7)


REFERENCE_APERTURE = 2.0955
"""The reference camera's aperture (Isaac's default 20.955 mm, in the focal length's units)."""


REFERENCE_FOCAL_LENGTH = 3.0


WIDE_REFERENCE_FOCAL_LENGTH = 2.0
"""The wheeled robot's shorter focal length in the reference: a wider view."""


WIDE_VIEW_BODIES = frozenset({"nova_carter"})


def fov_deg(focal_length: float, aperture: float = REFERENCE_APERTURE) -> float:
    """Return the field of view, in degrees, of a pinhole camera; images are square."""
    return 2 * math.degrees(math.atan(aperture / (2 * focal_length)))


CAMERA_FOVY_DEG = fov_deg(REFERENCE_FOCAL_LENGTH)
"""About 38.5 degrees. No body needs a wider view to keep its reflected mark and hand in the
image (``simulation.visibility`` checks every scene), so no body overrides the reference's."""


WIDE_CAMERA_FOVY_DEG = fov_deg(WIDE_REFERENCE_FOCAL_LENGTH)
"""About 55.3 degrees, for the bodies in ``WIDE_VIEW_BODIES``."""


def camera_fovy_deg(body_id: str) -> float:
    """Return the camera's field of view, in degrees, in the scenes of ``body_id``."""
    return WIDE_CAMERA_FOVY_DEG if body_id in WIDE_VIEW_BODIES else CAMERA_FOVY_DEG


def look_at_quat(
    eye: tuple[float, float, float], target: tuple[float, float, float]
) -> list[float]:
    """Return the quaternion (w, x, y, z) of a camera at ``eye`` looking at ``target``, z up.

    A MuJoCo camera looks along its local -z with +x to the right and +y up in the image.
    """
    forward = np.subtract(target, eye).astype(float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, (0.0, 0.0, 1.0))
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    rot = np.column_stack([right, up, -forward])
    w = math.sqrt(max(0.0, 1.0 + rot[0, 0] + rot[1, 1] + rot[2, 2])) / 2
    x = math.copysign(
        math.sqrt(max(0.0, 1.0 + rot[0, 0] - rot[1, 1] - rot[2, 2])) / 2, rot[2, 1] - rot[1, 2]
    )
    y = math.copysign(
        math.sqrt(max(0.0, 1.0 - rot[0, 0] + rot[1, 1] - rot[2, 2])) / 2, rot[0, 2] - rot[2, 0]
    )
    z = math.copysign(
        math.sqrt(max(0.0, 1.0 - rot[0, 0] - rot[1, 1] + rot[2, 2])) / 2, rot[1, 0] - rot[0, 1]
    )
    return [w, x, y, z]
