"""The Siconos .dat reader (solvers.problem_files): hand-written files with known contents (the
orientation of dense and block storage checked on non-symmetric matrices), round trips of
random problems, every bad or truncated file named with its culprit, the 34 third-party
problems of ../shared/problems/fc3d read, and each of them compared entry by entry with what
Siconos' own reader makes of the same file."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from solvers import FrictionContactProblem
from solvers.problem_files import ProblemFileError, read_siconos_dat

SMALL = Path(__file__).parent / "data" / "fc3d"  # 19 small files of the set, in the repository
SMALL_FILES = sorted(SMALL.glob("*.dat"))


def _whole_set() -> Path | None:
    """The 34-problem set: $LCPDYN_FC3D_PROBLEMS, else ../shared/problems/fc3d beside the clone."""
    named = os.environ.get("LCPDYN_FC3D_PROBLEMS")
    where = Path(named) if named else Path(__file__).resolve().parents[2] / "shared" / "problems" / "fc3d"
    return where if where.is_dir() else None


WHOLE = _whole_set()
needs_whole_set = pytest.mark.skipif(
    WHOLE is None,
    reason="the 34-problem fc3d set is not here (set LCPDYN_FC3D_PROBLEMS or place it in ../shared/problems/fc3d)",
)


def _numbers(values) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def write_dense(path, W, q, mu):
    """A Siconos dump with dense storage (column-major values), as NM_write_in_file writes it."""
    n = W.shape[0]
    text = f"3\n{len(mu)}\n0\n{n}\n{n}\n{n}\t{n}\n{_numbers(W.T)}\n{_numbers(q)}\n{_numbers(mu)}\n"
    Path(path).write_text(text)


def write_blocks(path, W, q, mu, drop_zero=True):
    """A Siconos dump with sparse-block storage (3 x 3 blocks, column-major inside a block)."""
    nc = len(mu)
    n = 3 * nc
    pointer, columns, blocks = [0], [], []
    for i in range(nc):
        for j in range(nc):
            B = W[3 * i : 3 * i + 3, 3 * j : 3 * j + 3]
            if drop_zero and not B.any():
                continue
            columns.append(j)
            blocks.append(B)
        pointer.append(len(columns))
    ends = " ".join(str(3 * (i + 1)) for i in range(nc))
    lines = [f"3\n{nc}\n1\n{n}\n{n}", f"{len(blocks)}\n{nc}\n{nc}", ends, ends, f"{nc + 1}\n{len(blocks)}"]
    lines += [" ".join(map(str, pointer)), " ".join(map(str, columns))]
    for k, B in enumerate(blocks):
        lines += [str(k), _numbers(B.T)]
    lines += [_numbers(q), _numbers(mu)]
    Path(path).write_text("\n".join(lines) + "\n")


def test_the_one_contact_file_has_its_known_contents():
    problem = read_siconos_dat(SMALL / "FrictionContact3D_1c.dat")
    assert isinstance(problem, FrictionContactProblem)
    np.testing.assert_array_equal(problem.W, [[15, -1, -2], [-1, 14, 1], [-2, 1, 16]])
    np.testing.assert_array_equal(problem.b, [-1, 2, 3])
    np.testing.assert_array_equal(problem.mu, [0.1])


def test_dense_values_are_column_major(tmp_path):
    W = np.arange(1.0, 10.0).reshape(3, 3)  # not symmetric: a transposed read would show
    path = tmp_path / "dense.dat"
    path.write_text("3\n1\n0\n3\n3\n3 3\n1 4 7 2 5 8 3 6 9\n0.5 -1 2\n0.3\n")
    np.testing.assert_array_equal(read_siconos_dat(path).W, W)


def test_sparse_blocks_are_placed_and_column_major(tmp_path):
    """Two contacts, blocks (0, 0), (0, 1) and (1, 1) only: W[3:, :3] = 0 and each block's nine
    values fill its columns first."""
    path = tmp_path / "sbm.dat"
    block = lambda a: " ".join(str(a + k) for k in range(9))  # noqa: E731
    path.write_text(
        f"3\n2\n1\n6\n6\n3\n2\n2\n3 6\n3 6\n3\n3\n0 2 3\n0 1 1\n0\n{block(10)}\n1\n{block(20)}\n2\n{block(30)}\n"
        "1 2 3 4 5 6\n0.1 0.2\n"
    )
    W = read_siconos_dat(path).W
    np.testing.assert_array_equal(W[:3, :3], np.arange(10, 19).reshape(3, 3).T)
    np.testing.assert_array_equal(W[:3, 3:], np.arange(20, 29).reshape(3, 3).T)
    np.testing.assert_array_equal(W[3:, 3:], np.arange(30, 39).reshape(3, 3).T)
    np.testing.assert_array_equal(W[3:, :3], 0.0)


@pytest.mark.parametrize("writer", [write_dense, write_blocks])
@pytest.mark.parametrize("seed", [0, 1])
def test_round_trip_is_exact(tmp_path, writer, seed):
    rng = np.random.default_rng(seed)
    nc = 4
    W = rng.standard_normal((3 * nc, 3 * nc)) * 10.0 ** rng.integers(-8, 8, (3 * nc, 3 * nc))
    W[:3, 6:9] = 0.0  # an absent block
    q, mu = rng.standard_normal(3 * nc), rng.uniform(0, 1, nc)
    path = tmp_path / "problem.dat"
    writer(path, W, q, mu)
    problem = read_siconos_dat(path)
    np.testing.assert_array_equal(problem.W, W)
    np.testing.assert_array_equal(problem.b, q)
    np.testing.assert_array_equal(problem.mu, mu)


def _replace(text, old, new):
    assert old in text
    return text.replace(old, new, 1)


ONE = "3\n1\n0\n3\n3\n3 3\n1 0 0 0 1 0 0 0 1\n0.5 -1 2\n0.3\n"


@pytest.mark.parametrize(
    "text, match",
    [
        ("", r"truncated: the dimension d needs 1 number\(s\) from token 0"),
        (ONE[:-5], r"truncated: mu needs 1 number\(s\) from token 19"),
        (_replace(ONE, "3\n1\n0", "2\n1\n0"), "the dimension d is 2; only 3D"),
        (_replace(ONE, "3\n1\n0", "3\n1\n2"), "storage type is 2"),
        (_replace(ONE, "0\n3\n3\n3 3", "0\n3\n3\n3 4"), r"dense W: size1 is 4, expected 3"),
        (_replace(ONE, "0\n3\n3\n3 3", "0\n6\n3\n3 3"), r"W: size0 \(= d nc\) is 6, expected 3"),
        (_replace(ONE, "1 0 0 0 1", "1 0 x 0 1"), r"'x' is not a number \(token 9\)"),
        (_replace(ONE, "1 0 0 0 1", "1 0 nan 0 1"), "nan at token 9 is not finite"),
        (_replace(ONE, "0.5 -1 2", "0.5 -1 inf"), "q: inf at token 18 is not finite"),
        (_replace(ONE, "0.3", "-0.3"), "mu"),
        (_replace(ONE, "3\n1\n0", "3\none\n0"), "the number of contacts nc must be an integer, got 'one'"),
        (_replace(ONE, "3\n1\n0", "3\n-1\n0"), "the number of contacts nc must be >= 0, got -1"),
    ],
)
def test_bad_files_are_named(tmp_path, text, match):
    path = tmp_path / "bad.dat"
    path.write_text(text)
    with pytest.raises(ProblemFileError, match=match) as info:
        read_siconos_dat(path)
    assert str(path) in str(info.value)


SBM = "3\n2\n1\n6\n6\n2\n2\n2\n3 6\n3 6\n3\n2\n0 1 2\n0 1\n0\n{b0}\n1\n{b1}\n1 2 3 4 5 6\n0.1 0.2\n"
EYE = "1 0 0 0 1 0 0 0 1"


@pytest.mark.parametrize(
    "text, match",
    [
        (SBM.replace("0\n{b0}\n1", "0\n{b0}\n5"), "the number of block 1 is 5, expected 1"),
        (_replace(SBM, "0 1 2\n0 1", "0 2 2\n0 0"), r"block \(0, 0\) is given twice"),
        (_replace(SBM, "0 1 2\n0 1", "0 1 2\n0 7"), "a block-column index is outside 0..1"),
        (_replace(SBM, "3 6\n3 6", "3 5\n3 6"), "cumulative row-block sizes must increase from > 0 to 6"),
        (_replace(SBM, "3\n2\n0 1 2", "4\n2\n0 1 2"), r"filled1 \(block-row pointers\) is 4, expected 3"),
        (_replace(SBM, "0 1 2\n0 1", "1 1 2\n0 1"), "index1_data must rise from 0 to nbblocks = 2"),
    ],
)
def test_bad_block_storage_is_named(tmp_path, text, match):
    path = tmp_path / "bad.dat"
    path.write_text(text.format(b0=EYE, b1=EYE))
    with pytest.raises(ProblemFileError, match=match):
        read_siconos_dat(path)


def test_a_block_below_the_diagonal(tmp_path):
    path = tmp_path / "lower.dat"
    path.write_text(_replace(SBM, "0 1 2\n0 1", "0 1 2\n0 0").format(b0=EYE, b1="1 2 3 4 5 6 7 8 9"))
    W = read_siconos_dat(path).W
    np.testing.assert_array_equal(W[3:, :3], np.arange(1.0, 10.0).reshape(3, 3).T)
    np.testing.assert_array_equal(W[:3, 3:], 0.0)
    np.testing.assert_array_equal(W[3:, 3:], 0.0)


def test_missing_directory_and_binary_paths(tmp_path):
    with pytest.raises(ProblemFileError, match="no such file"):
        read_siconos_dat(tmp_path / "absent.dat")
    with pytest.raises(ProblemFileError, match="is a directory"):
        read_siconos_dat(tmp_path)
    binary = tmp_path / "binary.dat"
    binary.write_bytes(b"3\n1\n\x89HDF\r\n")
    with pytest.raises(ProblemFileError, match="not a text file"):
        read_siconos_dat(binary)


def test_the_small_problems_in_the_repository_are_read():
    assert len(SMALL_FILES) == 19
    contacts = {f.name: read_siconos_dat(f).contacts for f in SMALL_FILES}
    assert contacts["Rover4396.dat"] == 2 and contacts["Confeti-ex13-4contact-Fc3D-SBM.dat"] == 4


@needs_whole_set
def test_the_34_shared_problems_are_read():
    files = sorted(WHOLE.glob("*.dat"))
    assert len(files) == 34
    contacts = {f.name: read_siconos_dat(f).contacts for f in files}
    assert contacts["KaplasTower-i1061-4.hdf5.dat"] == 570
    assert contacts["RockPile_tob1.dat"] == 463
    for f in SMALL_FILES:  # the repository's copies are the set's files
        assert f.read_bytes() == (WHOLE / f.name).read_bytes(), f.name


def _compare_with_siconos(sn, path):
    """W entry by entry (NM_get_value), q and mu, bit for bit, against Siconos' own reader."""
    ours = read_siconos_dat(path)
    theirs = sn.frictionContact_new_from_filename(str(path))
    n = ours.W.shape[0]
    assert (theirs.dimension, theirs.numberOfContacts) == (3, ours.contacts), path.name
    W = np.array([[sn.NM_get_value(theirs.M, i, j) for j in range(n)] for i in range(n)])
    np.testing.assert_array_equal(W, ours.W, err_msg=path.name)
    np.testing.assert_array_equal(np.asarray(theirs.q), ours.b, err_msg=path.name)
    np.testing.assert_array_equal(np.asarray(theirs.mu), ours.mu, err_msg=path.name)


@pytest.mark.siconos
@pytest.mark.parametrize("path", SMALL_FILES, ids=lambda p: p.name)
def test_small_problems_read_as_siconos_reads_them(siconos, path):
    _compare_with_siconos(siconos, path)


@pytest.mark.siconos
@needs_whole_set
def test_every_shared_problem_reads_as_siconos_reads_it(siconos):
    for path in sorted(WHOLE.glob("*.dat")):
        _compare_with_siconos(siconos, path)
