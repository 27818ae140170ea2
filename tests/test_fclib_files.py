"""solvers.read_fclib: FCLIB HDF5 files (local and global 3D problems) written here with h5py in
the layout of FCLIB's own writer (fclib.c), read back and checked entry by entry; the global
problem's reduction against a dense elimination; every bad file named."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from solvers import read_fclib
from solvers.friction_contact import solve_friction_contact
from solvers.problem_files import ProblemFileError, read_siconos_dat

DATA = Path(__file__).parent / "data" / "fc3d"


def _write_matrix(group, A, form):
    """A in one of CSparse's forms, as fclib.c writes it (sizes as 1-element int datasets)."""
    A = sp.csc_matrix(A)
    if form == "csc":
        p, i, x, nz = A.indptr, A.indices, A.data, -1
    elif form == "csr":
        R = A.tocsr()
        p, i, x, nz = R.indptr, R.indices, R.data, -2
    elif form == "triplet":  # CSparse's: i rows, p columns, as Siconos and LMGC90 write
        T = A.tocoo()
        i, p, x, nz = T.row, T.col, T.data, T.nnz
    else:  # "triplet-comment": fclib.h's comment, p rows and i columns
        T = A.tocoo()
        p, i, x, nz = T.row, T.col, T.data, T.nnz
    for key, value in (("nzmax", x.size), ("m", A.shape[0]), ("n", A.shape[1]), ("nz", nz)):
        group.create_dataset(key, data=np.array([value], np.int32))
    group.create_dataset("p", data=np.asarray(p, np.int32))
    group.create_dataset("i", data=np.asarray(i, np.int32))
    group.create_dataset("x", data=np.asarray(x, float))


def write_local(path, W, q, mu, form="csc", solution=None, title=None):
    with h5py.File(path, "w") as f:
        root = f.create_group("fclib_local")
        root.create_dataset("spacedim", data=np.array([3], np.int32))
        _write_matrix(root.create_group("W"), W, form)
        vectors = root.create_group("vectors")
        vectors.create_dataset("q", data=q)
        vectors.create_dataset("mu", data=mu)
        if title is not None:
            root.create_group("info").create_dataset("title", data=np.bytes_(title))
        if solution is not None:
            group = f.create_group("solution")
            for key, value in solution.items():
                group.create_dataset(key, data=value)


def write_global(path, M, H, f_, w, mu, G=None, b=None, form="csc"):
    with h5py.File(path, "w") as f:
        root = f.create_group("fclib_global")
        root.create_dataset("spacedim", data=np.array([3], np.int32))
        _write_matrix(root.create_group("M"), M, form)
        _write_matrix(root.create_group("H"), H, form)
        vectors = root.create_group("vectors")
        vectors.create_dataset("f", data=f_)
        vectors.create_dataset("w", data=w)
        vectors.create_dataset("mu", data=mu)
        if G is not None:
            _write_matrix(root.create_group("G"), G, form)
            vectors.create_dataset("b", data=b)


@pytest.mark.parametrize("form", ["csc", "csr", "triplet"])
@pytest.mark.parametrize("name", ["Confeti-ex13-4contact-Fc3D-SBM.dat", "FC3D_Example1.dat"])
def test_a_local_problem_reads_back_bit_for_bit(tmp_path, form, name):
    problem = read_siconos_dat(DATA / name)
    r = np.arange(problem.b.size, dtype=float)
    write_local(tmp_path / "p.hdf5", problem.W, problem.b, problem.mu, form, {"r": r}, title="example")
    read = read_fclib(tmp_path / "p.hdf5")
    assert read.kind == "local" and read.info == {"title": "example"}
    np.testing.assert_array_equal(read.problem.W, problem.W)
    np.testing.assert_array_equal(read.problem.b, problem.b)
    np.testing.assert_array_equal(read.problem.mu, problem.mu)
    np.testing.assert_array_equal(read.solution["r"], r)


def _global_problem(seed, with_g):
    rng = np.random.default_rng(seed)
    n, contacts = 12, 3
    L = rng.normal(size=(n, n))
    M = L @ L.T + n * np.eye(n)
    M[np.abs(M) < 0.5] = 0.0  # sparse, still SPD (diagonally dominant)
    M = 0.5 * (M + M.T) + n * np.eye(n)
    H = rng.normal(size=(n, 3 * contacts)) * (rng.uniform(size=(n, 3 * contacts)) < 0.5)
    G = rng.normal(size=(n, 2)) if with_g else None
    return (
        M,
        H,
        rng.normal(size=n),
        rng.normal(size=3 * contacts),
        np.full(contacts, 0.4),
        G,
        (rng.normal(size=2) if with_g else None),
    )


@pytest.mark.parametrize("form", ["triplet", "triplet-comment", "csc"])
@pytest.mark.parametrize("with_g", [False, True])
def test_a_global_problem_is_reduced_to_the_local_one(tmp_path, with_g, form):
    """W = H^T X_H, q = H^T x_f + w with [M -G; G^T 0] X = [H f; 0 -b] (dense here); the local
    solution maps back to v with M v = H r + G lam + f and G^T v + b = 0 (FCLIB's definition)."""
    M, H, f, w, mu, G, b = _global_problem(4, with_g)
    write_global(tmp_path / "g.hdf5", M, H, f, w, mu, G, b, form=form)
    read = read_fclib(tmp_path / "g.hdf5")
    assert read.kind == "global"
    n, p = M.shape[0], 0 if G is None else G.shape[1]
    K = np.zeros((n + p, n + p))
    K[:n, :n] = M
    if p:
        K[:n, n:], K[n:, :n] = -G, G.T
    X = np.linalg.solve(
        K, np.column_stack([np.vstack([H, np.zeros((p, H.shape[1]))]), np.concatenate([f, -b if p else []])])
    )
    W = H.T @ X[:n, :-1]
    np.testing.assert_allclose(read.problem.W, 0.5 * (W + W.T), rtol=0, atol=1e-12 * np.abs(W).max())
    np.testing.assert_allclose(read.problem.b, H.T @ X[:n, -1] + w, rtol=0, atol=1e-12 * np.abs(w).max())
    result = solve_friction_contact(read.problem.W, read.problem.b, read.problem.mu, method="nsgs")
    assert result.success
    x = np.linalg.solve(K, np.concatenate([H @ result.r + f, -b if p else []]))
    v = x[:n]
    np.testing.assert_allclose(M @ v, H @ result.r + (G @ x[n:] if p else 0.0) + f, atol=1e-10)
    if p:
        np.testing.assert_allclose(G.T @ v + b, 0.0, atol=1e-10)
    np.testing.assert_allclose(H.T @ v + w, read.problem.W @ result.r + read.problem.b, atol=1e-9)


def _corrupt(path, edit):
    with h5py.File(path, "a") as f:
        edit(f)


def _replace(f, name, value):
    del f[name]
    f.create_dataset(name, data=value)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda f: _replace(f, "fclib_local/spacedim", np.array([2], np.int32)), "spacedim is 2"),
        (lambda f: _replace(f, "fclib_local/vectors/q", np.zeros(5)), "q has 5 entries, expected 12"),
        (lambda f: _replace(f, "fclib_local/vectors/mu", np.array([0.3, np.nan, 0.3, 0.3])), r"mu\[1\] = nan"),
        (lambda f: _replace(f, "fclib_local/W/p", np.array([0, 5, 3], np.int32)), "bad pointers"),
        (lambda f: _replace(f, "fclib_local/W/nz", np.array([-3], np.int32)), "nz = -3"),
        (lambda f: f["fclib_local"].create_group("V"), "extra unknowns"),
        (lambda f: _replace(f, "fclib_local/W/i", np.full(200, 40, np.int32)), "outside its 12 x 12"),
        (lambda f: _replace(f, "fclib_local/vectors/mu", np.array([0.3, -1.0, 0.3, 0.3])), "mu"),
        (lambda f: f.move("fclib_local", "something"), "not an FCLIB problem"),
        (lambda f: f.__delitem__("fclib_local/W/x"), "lacks the dataset 'x'"),
    ],
)
def test_bad_local_files_are_named(tmp_path, edit, match):
    problem = read_siconos_dat(DATA / "Confeti-ex13-4contact-Fc3D-SBM.dat")
    path = tmp_path / "bad.hdf5"
    write_local(path, problem.W, problem.b, problem.mu)
    _corrupt(path, edit)
    with pytest.raises(ProblemFileError, match=match) as info:
        read_fclib(path)
    assert str(path) in str(info.value)


def test_missing_corrupt_and_singular_files_are_named(tmp_path):
    with pytest.raises(ProblemFileError, match="no such file"):
        read_fclib(tmp_path / "absent.hdf5")
    text = tmp_path / "text.hdf5"
    text.write_text("not hdf5")
    with pytest.raises(ProblemFileError, match="not a readable HDF5 file"):
        read_fclib(text)
    M, H, f, w, mu, G, b = _global_problem(1, True)
    G[:, 1] = G[:, 0]  # dependent bilateral columns: [M -G; G^T 0] singular
    write_global(tmp_path / "singular.hdf5", M, H, f, w, mu, G, b)
    with pytest.raises(ProblemFileError, match="singular"):
        read_fclib(tmp_path / "singular.hdf5")


REAL = Path(__file__).parent / "data" / "fclib"  # from Siconos' sources (Apache 2.0): README there


@pytest.mark.parametrize(
    "name, kind, contacts",
    [
        ("CubeH8.hdf5", "global", 1),
        ("LMGC_GlobalFrictionContactProblem00046.hdf5", "global", 9),
        ("Box_Stacks-i0122-82-5.hdf5", "global", 82),
        ("LMGC_100_PR_PerioBox-i00361-60-03000.hdf5", "local", 60),
    ],
)
def test_files_of_the_fclib_collection_read_and_solve(name, kind, contacts):
    """Files that Siconos and LMGC90 wrote (issue 46, item 9): the global ones keep their triplets'
    row indices in i and column indices in p (CSparse's convention; fclib.h's comment says the
    opposite, and the reader that followed it refused every one of them: "H has an index outside
    its 162 x 3 size"). Each reads to the contacts its mu says, a symmetric positive semidefinite
    Delassus matrix, and a problem NSGS solves; for a global file the answer maps back to
    velocities that satisfy FCLIB's equations M v = H r + f and u = H^T v + w. The LMGC90 dump's M
    is not symmetric (1.5e-7 of its largest entry, conditioning 1e7): its W is kept as those
    equations give it, 16 % asymmetric, where symmetrizing it posed another problem."""
    read = read_fclib(REAL / name)
    assert read.kind == kind and read.problem.mu.shape == (contacts,)
    W, b = read.problem.W, read.problem.b
    assert W.shape == (3 * contacts, 3 * contacts)
    scale = np.abs(W).max()
    asymmetry = np.abs(W - W.T).max() / scale
    assert asymmetry > 0.1 if name.startswith("LMGC_Global") else asymmetry < 1e-12
    assert np.linalg.eigvalsh(0.5 * (W + W.T)).min() > -1e-10 * scale
    result = solve_friction_contact(W, b, read.problem.mu, method="nsgs", max_sweeps=100_000)
    assert result.success, result.message
    if kind == "global":
        with h5py.File(REAL / name, "r") as f:
            from solvers.problem_files import _h5_matrix

            root = f["fclib_global"]
            assert "G" not in root
            M, H = _h5_matrix(name, root["M"], "M"), _h5_matrix(name, root["H"], "H")
            f_, w = np.asarray(root["vectors/f"]), np.asarray(root["vectors/w"])
        assert H.shape == (M.shape[0], 3 * contacts)
        v = sp.linalg.spsolve(M.tocsc(), H @ result.r + f_)
        np.testing.assert_allclose(M @ v, H @ result.r + f_, rtol=0, atol=1e-10 * np.abs(f_).max())
        u = H.T @ v + w
        np.testing.assert_allclose(u, W @ result.r + b, rtol=0, atol=1e-8 * (np.abs(u).max() + np.abs(b).max()))


def test_a_rolling_friction_problem_is_refused_naming_what_it_is(tmp_path):
    """Siconos also writes FCLIB rolling-friction problems (/fclib_global_rolling): another law,
    refused as such rather than as "not an FCLIB problem"."""
    path = tmp_path / "rolling.hdf5"
    with h5py.File(path, "w") as f:
        f.create_group("fclib_global_rolling").create_dataset("spacedim", data=np.array([5], np.int32))
    with pytest.raises(ProblemFileError, match="fclib_global_rolling is an FCLIB rolling-friction problem"):
        read_fclib(path)
