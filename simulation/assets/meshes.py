"""Mesh simplification for imported robot models.

The robots' meshes are made for close-up work (up to 90,000 triangles a part) while the camera
sees a robot from 3 to 5 metres away, at most a few hundred pixels tall. Software rendering on
the CPU pays for every triangle three times (the view, the reflection and the shadow map), so
imported meshes are simplified by vertex clustering before they are compiled.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from simulation.caching import computing, single_flight

logger = logging.getLogger(__name__)

MAX_FACES = 3000
"""Triangles kept per mesh at most."""

CACHE_ENV = "MIRRORBENCH_MESH_CACHE"
"""Where simplified meshes are kept between processes: a folder, or ``off``; by default
``$XDG_CACHE_HOME/mirrorbench/meshes`` (``~/.cache/...``). Each file is named by what made it
(the source file's bytes, the scale, the budget, this module's code, NumPy's and MuJoCo's
versions), so a cached mesh is the one this process would compute."""


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


def face_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Return each triangle's normal scaled by twice its area (zero for a degenerate one); it
    points to the side the triangle's winding (counter-clockwise) faces."""
    a, b, c = (vertices[faces[:, i]] for i in range(3))
    return np.cross(b - a, c - a)


def _sums(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """``out[i] = values[index == i].sum(axis=0)`` for each of ``n`` rows (``np.add.at``'s
    result, through ``np.bincount``, which is many times faster)."""
    flat = values.reshape(len(values), -1)
    out = np.stack([np.bincount(index, flat[:, k], minlength=n) for k in range(flat.shape[1])], 1)
    return out.reshape((n, *values.shape[1:]))


def normal_bins(vertices: np.ndarray, faces: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Return each vertex's side: which of the six axis directions (+x, -x, +y, ...) its normal
    (the area-weighted mean of its triangles') is closest to, 0 to 5.

    Two sides of a thin wall, or of a fold, have opposite normals and so never share a side.
    ``normals`` are the triangles' (``face_normals``).
    """
    summed = _sums(faces.reshape(-1), np.repeat(normals, 3, axis=0), len(vertices))
    axis = np.argmax(np.abs(summed), axis=1)
    negative = summed[np.arange(len(vertices)), axis] < 0
    return 2 * axis + negative


def _clusters(
    vertices: np.ndarray, faces: np.ndarray, sides: np.ndarray, cell: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return each vertex's cluster (its grid cell and side), each cluster's size and the
    triangles as clusters, less those that collapse and duplicates; turned-over triangles are
    still in (``_cluster_points`` decides where the clusters' vertices go)."""
    keys = np.column_stack([np.floor(vertices / cell).astype(np.int64), sides])
    _, cluster, counts = _unique_rows(keys, return_inverse=True, return_counts=True)
    cluster = cluster.reshape(-1)
    tri = cluster[faces]
    keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
    return cluster, counts, keep


def _cluster_points(
    vertices: np.ndarray,
    faces: np.ndarray,
    normals: np.ndarray,
    cluster: np.ndarray,
    counts: np.ndarray,
) -> np.ndarray:
    """Return each cluster's vertex: the point nearest to the planes of its triangles.

    The mean of a cluster's vertices cuts corners and rounds edges off (a box's edge moves
    inwards by up to half a cell); the point that minimises the summed squared distances to
    the planes of the triangles around the cluster (weighted by area: Lindstrom's quadric
    clustering) stays on them. Where the planes do not pin a point down (a flat or a
    cylindrical patch) the mean fills in the free directions, and the point is kept within the
    box around the cluster's vertices.
    """
    n = counts.size
    mean = _sums(cluster, vertices, n) / counts[:, None]
    twice_area = np.linalg.norm(normals, axis=1)
    unit = normals / np.where(twice_area > 0, twice_area, 1.0)[:, None]
    offset = np.einsum("ij,ij->i", unit, vertices[faces[:, 0]])
    corners = cluster[faces].reshape(-1)
    a = _sums(
        corners,
        np.repeat(twice_area[:, None, None] * unit[:, :, None] * unit[:, None, :], 3, axis=0),
        n,
    )
    b = _sums(corners, np.repeat((twice_area * offset)[:, None] * unit, 3, axis=0), n)
    values, vectors = np.linalg.eigh(a)
    kept = values > 1e-3 * values[:, -1:]
    inverse = np.where(kept, 1.0 / np.where(kept, values, 1.0), 0.0)
    residual = b - np.einsum("nij,nj->ni", a, mean)
    step = np.einsum("nij,nj->ni", vectors, inverse * np.einsum("nji,nj->ni", vectors, residual))
    # Within the box around the cluster's own vertices: never past the surface's extent.
    order = np.argsort(cluster, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    low = np.minimum.reduceat(vertices[order], starts)
    high = np.maximum.reduceat(vertices[order], starts)
    return np.clip(mean + step, low, high)


def cluster_vertices(
    vertices: np.ndarray, faces: np.ndarray, cell: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return a simplified mesh: vertices snapped to a grid of ``cell`` metres and merged.

    Each occupied grid cell becomes one vertex per side of the surface in it (sides as
    ``normal_bins`` has them), placed by ``_cluster_points``: the two faces of a wall thinner
    than a cell stay apart instead of collapsing onto each other, which drew one face's back
    where the other's front belonged (holes and dark triangles). Triangles that collapse onto
    fewer than three vertices, duplicates, and those that turn over (their normal now points
    against the original's) are dropped.
    """
    normals = face_normals(vertices, faces)
    return _finish(vertices, faces, normals, normal_bins(vertices, faces, normals), cell)


def _finish(
    vertices: np.ndarray, faces: np.ndarray, normals: np.ndarray, sides: np.ndarray, cell: float
) -> tuple[np.ndarray, np.ndarray]:
    cluster, counts, keep = _clusters(vertices, faces, sides, cell)
    merged = _cluster_points(vertices, faces, normals, cluster, counts)
    tri = cluster[faces]
    keep &= np.einsum("ij,ij->i", face_normals(merged, tri), normals) > 0
    tri = tri[keep]
    _, first = _unique_rows(np.sort(tri, axis=1), return_index=True)
    tri = tri[np.sort(first)]
    used, remap = np.unique(tri, return_inverse=True)
    return merged[used], remap.reshape(-1, 3)


def simplify(
    vertices: np.ndarray, faces: np.ndarray, max_faces: int = MAX_FACES
) -> tuple[np.ndarray, np.ndarray]:
    """Return the mesh with at most ``max_faces`` triangles, keeping as much detail as fits.

    The grid grows until the triangles that survive clustering fit: counted first as they
    collapse, then (once fewer than twice the budget) less those that turn over with each
    cluster's vertex at its mean, then as ``cluster_vertices`` gives them (placing the vertices
    on their planes is the slow part).
    """
    if len(faces) <= max_faces:
        return vertices, faces
    diagonal = float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))
    normals = face_normals(vertices, faces)
    sides = normal_bins(vertices, faces, normals)
    cell = diagonal / 200
    while True:
        cluster, counts, keep = _clusters(vertices, faces, sides, cell)
        tri = cluster[faces][keep]
        count = len(_unique_rows(np.sort(tri, axis=1))[0])
        if count <= 2 * max_faces:
            mean = _sums(cluster, vertices, counts.size) / counts[:, None]
            upright = np.einsum("ij,ij->i", face_normals(mean, tri), normals[keep]) > 0
            count = len(_unique_rows(np.sort(tri[upright], axis=1))[0])
            if count <= max_faces:
                v, f = _finish(vertices, faces, normals, sides, cell)
                if len(f) <= max_faces:
                    return v, f
                count = len(f)
        # A surface's triangles go as 1 / cell^2: grow the cell by about what is left.
        cell *= float(np.clip(np.sqrt(count / max_faces), 1.15, 2.0))


def _cache_folder() -> Path | None:
    chosen = os.environ.get(CACHE_ENV, "")
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mirrorbench" / "meshes"


@cache
def _code_digest() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _cache_path(path: str, scale: tuple[float, ...], max_faces: int) -> Path | None:
    folder = _cache_folder()
    if folder is None:
        return None
    try:
        source = Path(path).read_bytes()
    except OSError:
        return None
    what = hashlib.sha256(source)
    for part in (repr(scale), str(max_faces), _code_digest(), np.__version__, mujoco.__version__):
        what.update(b"\0" + part.encode())
    return folder / f"{what.hexdigest()}.npz"


def _cache_read(file: Path) -> tuple[np.ndarray, np.ndarray] | None:
    try:
        with np.load(file, allow_pickle=False) as stored:
            vertices, faces = stored["vertices"], stored["faces"]
    except (OSError, ValueError, KeyError):
        return None
    if vertices.dtype != np.float64 or faces.dtype != np.int64 or faces.size % 3:
        return None
    return vertices, faces


def _cache_write(file: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Write whole or not at all: a temporary file renamed into place."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=file.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, vertices=vertices, faces=faces)
            os.replace(temporary, file)
        finally:
            Path(temporary).unlink(missing_ok=True)
    except OSError as exc:  # a read-only or full disk: compute again next time
        logger.info("Cannot keep a simplified mesh in %s: %s", file.parent, exc)


@single_flight
@lru_cache(maxsize=256)
def _load_simplified(
    path: str, scale: tuple[float, ...], max_faces: int
) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Simplify the mesh of ``path``: from the disk cache (``CACHE_ENV``) when it has it."""
    cached = _cache_path(path, scale, max_faces)
    found = _cache_read(cached) if cached is not None and cached.exists() else None
    if found is not None:
        vertices, faces = found
        return tuple(vertices.tolist()), tuple(int(i) for i in faces.tolist())
    vertices, faces = _simplified(path, scale, max_faces)
    if cached is not None:
        _cache_write(cached, vertices, faces)
    return tuple(vertices.tolist()), tuple(int(i) for i in faces.tolist())


def _simplified(
    path: str, scale: tuple[float, ...], max_faces: int
) -> tuple[np.ndarray, np.ndarray]:
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
    return np.ascontiguousarray(v, dtype=np.float64).ravel(), f.astype(np.int64).ravel()


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
