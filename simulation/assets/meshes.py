"""Mesh simplification for imported robot models.

The robots' meshes are made for close-up work (up to 90,000 triangles a part) while the camera
sees a robot from 3 to 5 metres away, at most a few hundred pixels tall. Software rendering on
the CPU pays for every triangle three times (the view, the reflection and the shadow map), so
imported meshes are simplified by vertex clustering before they are compiled.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import mujoco
import numpy as np

from simulation.caching import computing, single_flight

MAX_FACES = 3000
"""Triangles kept per mesh at most."""


def _row_ids(rows: np.ndarray) -> np.ndarray:
    """One int64 per row of integers, ordered as the rows are lexicographically.

    ``np.unique(rows, axis=0)`` sorts the rows as structured records, several times slower
    than sorting these; the unique values, their order, and so every index derived from them
    are the same. Rows whose ranges do not fit in 62 bits (or no rows) are returned as they
    are, and then ``axis=0`` is used.
    """
    if not len(rows):
        return rows
    low = rows.min(axis=0)
    spans = rows.max(axis=0) - low + 1
    if float(np.prod(spans.astype(float))) >= 2.0**62:
        return rows
    shifted = rows - low
    ids = shifted[:, 0].copy()
    for column in range(1, rows.shape[1]):
        ids *= spans[column]
        ids += shifted[:, column]
    return ids


def _unique_rows(rows: np.ndarray, **kw: bool) -> tuple[np.ndarray, ...]:
    """``np.unique(rows, axis=0, **kw)`` through ``_row_ids``: the indices, inverse and counts
    are the same (the first value is the unique ids, or rows where they could not be packed)."""
    ids = _row_ids(rows)
    unique: Any = np.unique
    result = unique(ids, axis=0 if ids.ndim == 2 else None, **kw)
    return result if isinstance(result, tuple) else (result,)


def cluster_vertices(
    vertices: np.ndarray, faces: np.ndarray, cell: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return a simplified mesh: vertices snapped to a grid of ``cell`` metres and merged.

    Each occupied grid cell becomes one vertex (the mean of its vertices); triangles that
    collapse onto fewer than three cells, and duplicates, are dropped.
    """
    keys = np.floor(vertices / cell).astype(np.int64)
    _, cluster, counts = _unique_rows(keys, return_inverse=True, return_counts=True)
    cluster = cluster.reshape(-1)
    merged = np.zeros((counts.size, 3))
    np.add.at(merged, cluster, vertices)
    merged /= counts[:, None]
    tri = cluster[faces]
    keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
    tri = tri[keep]
    _, first = _unique_rows(np.sort(tri, axis=1), return_index=True)
    tri = tri[np.sort(first)]
    used, remap = np.unique(tri, return_inverse=True)
    return merged[used], remap.reshape(-1, 3)


def simplify(
    vertices: np.ndarray, faces: np.ndarray, max_faces: int = MAX_FACES
) -> tuple[np.ndarray, np.ndarray]:
    """Return the mesh with at most ``max_faces`` triangles, keeping as much detail as fits."""
    if len(faces) <= max_faces:
        return vertices, faces
    diagonal = float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))
    cell = diagonal / 200
    while True:
        v, f = cluster_vertices(vertices, faces, cell)
        if len(f) <= max_faces:
            return v, f
        cell *= 1.25


@single_flight
@lru_cache(maxsize=256)
def _load_simplified(
    path: str, scale: tuple[float, ...], max_faces: int
) -> tuple[tuple[float, ...], tuple[int, ...]]:
    spec = mujoco.MjSpec()
    spec.add_mesh(name="m", file=path, scale=list(scale))
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname="m")
    model = spec.compile()
    start, count = model.mesh_vertadr[0], model.mesh_vertnum[0]
    vertices = model.mesh_vert[start : start + count].astype(float)
    faces = model.mesh_face[model.mesh_faceadr[0] : model.mesh_faceadr[0] + model.mesh_facenum[0]]
    # The compiler moves a mesh to its centre of mass and principal axes: undo it, so the
    # simplified mesh sits where the file's mesh did.
    rotation = np.zeros(9)
    mujoco.mju_quat2Mat(rotation, model.mesh_quat[0])
    vertices = vertices @ rotation.reshape(3, 3).T + model.mesh_pos[0]
    v, f = simplify(vertices, faces.astype(np.int64), max_faces)
    return tuple(v.ravel().tolist()), tuple(int(i) for i in f.ravel())


def simplify_meshes(spec: mujoco.MjSpec, max_faces: int = MAX_FACES) -> None:
    """Replace every file mesh of ``spec`` with a simplified copy (cached per file and scale).

    Meshes another thread is simplifying now are left to the end: two threads setting up
    scenes of one robot share its meshes between them instead of waiting on each other.
    """
    later = []
    for mesh in spec.meshes:
        if not mesh.file:
            continue
        key = (mesh.file, tuple(float(s) for s in mesh.scale), max_faces)
        if computing(_load_simplified, *key):
            later.append((mesh, key))
        else:
            _use_simplified(mesh, key)
    for mesh, key in later:
        _use_simplified(mesh, key)


def _use_simplified(mesh: mujoco.MjsMesh, key: tuple[str, tuple[float, ...], int]) -> None:
    vertices, faces = _load_simplified(*key)
    mesh.file = ""
    mesh.scale = [1.0, 1.0, 1.0]
    mesh.uservert = list(vertices)
    mesh.userface = list(faces)
    mesh.usernormal = []
    mesh.usertexcoord = []
