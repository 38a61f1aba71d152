import numpy as np

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
