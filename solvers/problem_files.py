"""Readers of third-party frictional-contact problem files, returning the front door's
:class:`~solvers.friction_contact.FrictionContactProblem` (u = W r + b, unknowns per contact
ordered (normal, t1, t2), Coulomb cone of mu per contact).

:func:`read_siconos_dat` reads Siconos' plain-text dump of a ``FrictionContactProblem`` (the
format of the Siconos problem sets and of FCLIB problems exported by Siconos,
``../shared/problems/fc3d``), :func:`read_fclib` an FCLIB HDF5 file (Acary, Brémond, Koziniec,
Mercier and Dubois' Frictional Contact LIBrary); each reader's docstring gives its format.

Siconos' q is lcpdyn's b. Every count, index and size is checked against the others before it is
used, every number must parse and be finite, and mu >= 0 (through
:meth:`FrictionContactProblem.make`); a bad or truncated file is a ``ValueError``
that names the file, the item and the position (the token's index) where it went wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .friction_contact import FrictionContactProblem

__all__ = ["read_siconos_dat", "read_fclib", "FclibFile", "ProblemFileError"]


class ProblemFileError(ValueError):
    """A problem file that cannot be read: the message names the file, the item and where."""


class _Tokens:
    """The file's whitespace-separated tokens, consumed in order with named, checked reads."""

    def __init__(self, path: Path):
        self.path = path
        try:
            text = path.read_text(encoding="ascii")
        except FileNotFoundError:
            raise ProblemFileError(f"{path}: no such file") from None
        except IsADirectoryError:
            raise ProblemFileError(f"{path}: is a directory, not a problem file") from None
        except UnicodeDecodeError as exc:
            raise ProblemFileError(f"{path}: not a text file (byte {exc.start} is not ASCII)") from None
        self.tokens = text.split()
        self.at = 0

    def fail(self, message: str):
        raise ProblemFileError(f"{self.path}: {message}")

    def _take(self, count: int, what: str) -> list[str]:
        if self.at + count > len(self.tokens):
            self.fail(
                f"truncated: {what} needs {count} number(s) from token {self.at}, the file ends after "
                f"{len(self.tokens) - self.at}"
            )
        out = self.tokens[self.at : self.at + count]
        self.at += count
        return out

    def integer(self, what: str, minimum: int = 0) -> int:
        (token,) = self._take(1, what)
        try:
            value = int(token)
        except ValueError:
            self.fail(f"{what} must be an integer, got {token!r} (token {self.at - 1})")
        if value < minimum:
            self.fail(f"{what} must be >= {minimum}, got {value} (token {self.at - 1})")
        return value

    def integers(self, count: int, what: str) -> np.ndarray:
        start = self.at
        tokens = self._take(count, what)
        try:
            return np.array([int(t) for t in tokens], dtype=np.int64)
        except ValueError:
            bad = next(i for i, t in enumerate(tokens) if not t.lstrip("+-").isdigit())
            self.fail(f"{what}: {tokens[bad]!r} is not an integer (token {start + bad})")

    def floats(self, count: int, what: str) -> np.ndarray:
        start = self.at
        tokens = self._take(count, what)
        try:
            values = np.array(tokens, dtype=np.float64)
        except ValueError:
            bad = next(i for i, t in enumerate(tokens) if not _is_float(t))
            self.fail(f"{what}: {tokens[bad]!r} is not a number (token {start + bad})")
        finite = np.isfinite(values)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            self.fail(f"{what}: {tokens[bad]} at token {start + bad} is not finite")
        return values

    def expect(self, value: int, expected: int, what: str):
        if value != expected:
            self.fail(f"{what} is {value}, expected {expected} (before token {self.at})")


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _dense(tokens: _Tokens, size: int) -> np.ndarray:
    tokens.expect(tokens.integer("dense W: size0"), size, "dense W: size0")
    tokens.expect(tokens.integer("dense W: size1"), size, "dense W: size1")
    values = tokens.floats(size * size, f"dense W ({size} x {size}, column-major)")
    return values.reshape(size, size).T.copy()  # column-major


def _sparse_block(tokens: _Tokens, size: int) -> np.ndarray:
    blocks = tokens.integer("SBM W: nbblocks")
    rows = tokens.integer("SBM W: blocknumber0 (block rows)", minimum=1)
    cols = tokens.integer("SBM W: blocknumber1 (block columns)", minimum=1)
    row_end = tokens.integers(rows, "SBM W: cumulative row-block sizes")
    col_end = tokens.integers(cols, "SBM W: cumulative column-block sizes")
    for name, ends in (("row", row_end), ("column", col_end)):
        if not (np.all(np.diff(ends) > 0) and ends[0] > 0 and ends[-1] == size):
            tokens.fail(
                f"SBM W: the cumulative {name}-block sizes must increase from > 0 to {size}, got "
                f"{ends[:5].tolist()}{'...' if ends.size > 5 else ''} ending at {ends[-1]}"
            )
    filled1 = tokens.integer("SBM W: filled1")
    filled2 = tokens.integer("SBM W: filled2")
    tokens.expect(filled1, rows + 1, "SBM W: filled1 (block-row pointers)")
    tokens.expect(filled2, blocks, "SBM W: filled2 (block-column indices)")
    pointer = tokens.integers(filled1, "SBM W: index1_data (block-row pointers)")
    column = tokens.integers(filled2, "SBM W: index2_data (block-column indices)")
    if pointer[0] != 0 or pointer[-1] != blocks or np.any(np.diff(pointer) < 0):
        tokens.fail(f"SBM W: index1_data must rise from 0 to nbblocks = {blocks}, got {pointer.tolist()[:8]}...")
    if blocks and (column.min() < 0 or column.max() >= cols):
        tokens.fail(f"SBM W: a block-column index is outside 0..{cols - 1}")
    W = np.zeros((size, size))
    row_start = np.concatenate([[0], row_end[:-1]])
    col_start = np.concatenate([[0], col_end[:-1]])
    block_row = np.repeat(np.arange(rows), np.diff(pointer))
    seen = np.zeros((rows, cols), bool)
    for k in range(blocks):
        number = tokens.integer(f"SBM W: the number of block {k}")
        tokens.expect(number, k, f"SBM W: the number of block {k}")
        i, j = block_row[k], column[k]
        if seen[i, j]:
            tokens.fail(f"SBM W: block ({i}, {j}) is given twice (block {k})")
        seen[i, j] = True
        h, w = row_end[i] - row_start[i], col_end[j] - col_start[j]
        values = tokens.floats(h * w, f"SBM W: block {k} ({h} x {w}, column-major)")
        W[row_start[i] : row_end[i], col_start[j] : col_end[j]] = values.reshape(w, h).T
    return W


def read_siconos_dat(path) -> FrictionContactProblem:
    """The 3D friction-contact problem in a Siconos ``.dat`` dump as a
    :class:`~solvers.friction_contact.FrictionContactProblem` (W dense, float64).

    Reads Siconos' plain-text dump of a ``FrictionContactProblem`` (the
    writer is ``frictionContact_printInFile`` in Siconos' ``FrictionContactProblem.c``; matrices
    through ``NM_write_in_file`` / ``SBM_write_in_file``), the format of the Siconos problem sets
    and of FCLIB problems exported by Siconos (``../shared/problems/fc3d``). Whitespace-separated
    numbers:

    1. ``d`` (the dimension, 3) and ``nc`` (contacts);
    2. W: ``storage size0 size1`` (size0 = size1 = d nc), then

       - storage 0 (dense): ``size0 size1`` again and the size0 x size1 values in column-major
         order;
       - storage 1 (sparse block, SBM): ``nbblocks blocknumber0 blocknumber1``, the cumulative
         row-block sizes (blocknumber0 numbers) and column-block sizes (blocknumber1), ``filled1
         filled2``, the block-row pointers ``index1_data`` (filled1 = blocknumber0 + 1 numbers) and
         the block-column indices ``index2_data`` (filled2 = nbblocks), then block by block its
         number k (0, 1, ...) and its values in column-major order; block k lies in the block row i
         with index1[i] <= k < index1[i+1] and the block column index2[k];

    3. q (size0 numbers), then mu (nc numbers). Anything after mu is ignored, as Siconos' own reader
       (``frictionContact_newFromFile``) ignores it: older files of the set end with one more
       integer (0 or 1; Siconos' current writer no longer writes it).
    """
    tokens = _Tokens(Path(path))
    dimension = tokens.integer("the dimension d", minimum=1)
    if dimension != 3:
        tokens.fail(f"the dimension d is {dimension}; only 3D friction-contact problems (d = 3) are read")
    contacts = tokens.integer("the number of contacts nc")
    size = dimension * contacts
    storage = tokens.integer("W's storage type")
    tokens.expect(tokens.integer("W: size0"), size, "W: size0 (= d nc)")
    tokens.expect(tokens.integer("W: size1"), size, "W: size1 (= d nc)")
    if storage == 0:
        W = _dense(tokens, size)
    elif storage == 1:
        W = _sparse_block(tokens, size)
    else:
        tokens.fail(f"W's storage type is {storage}; this reader knows 0 (dense) and 1 (sparse block)")
    q = tokens.floats(size, "q")
    mu = tokens.floats(contacts, "mu")  # what follows is not read, as Siconos' reader does not
    try:
        return FrictionContactProblem.make(W, q, mu)
    except ValueError as exc:
        raise ProblemFileError(f"{tokens.path}: {exc}") from None


@dataclass
class FclibFile:
    """An FCLIB problem as read: ``problem`` the local 3D problem u = W r + b (for a global
    file, after eliminating v and lam), ``kind`` "local" or "global", ``info`` (title,
    description, math_info: whichever the file has), ``solution`` (the file's reference r, u,
    v, l: whichever it has; r and u are the local problem's)."""

    problem: FrictionContactProblem
    kind: str
    info: dict = field(default_factory=dict)
    solution: dict = field(default_factory=dict)


def _h5_matrix(path, group, name):
    """A FCLIB matrix group as a SciPy CSC matrix (checked)."""
    import scipy.sparse as sp

    where = f"{path}: {group.name}"
    for key in ("nzmax", "m", "n", "nz", "p", "i", "x"):
        if key not in group:
            raise ProblemFileError(f"{where}: matrix {name} lacks the dataset {key!r}")
    try:
        nzmax, m, n, nz = (int(np.asarray(group[key]).reshape(-1)[0]) for key in ("nzmax", "m", "n", "nz"))
        p = np.asarray(group["p"], np.int64).reshape(-1)
        i = np.asarray(group["i"], np.int64).reshape(-1)
        x = np.asarray(group["x"], float).reshape(-1)
    except (TypeError, ValueError, IndexError) as exc:
        raise ProblemFileError(f"{where}: matrix {name} has an unreadable size or index ({exc})") from None
    if m < 0 or n < 0 or nzmax < 0:
        raise ProblemFileError(f"{where}: matrix {name} has a negative size (m = {m}, n = {n}, nzmax = {nzmax})")
    if not np.all(np.isfinite(x)):
        k = int(np.flatnonzero(~np.isfinite(x))[0])
        raise ProblemFileError(f"{where}: matrix {name}: value x[{k}] = {float(x[k])!r} is not finite")
    if nz >= 0:  # triplet: i rows, p columns (CSparse; module docstring)
        count = nz
        if p.size < nz or i.size < nz or x.size < nz:
            raise ProblemFileError(f"{where}: matrix {name} (triplet) has fewer than nz = {nz} entries")
        rows, cols, values = i[:nz], p[:nz], x[:nz]
        if count and not (_within(rows, m) and _within(cols, n)) and _within(cols, m) and _within(rows, n):
            rows, cols = cols, rows  # fclib.h's comment: p rows, i columns
    elif nz in (-1, -2):
        major = n if nz == -1 else m
        if p.size != major + 1 or p[0] != 0 or np.any(np.diff(p) < 0) or p[-1] > min(i.size, x.size):
            raise ProblemFileError(
                f"{where}: matrix {name} ({'columns' if nz == -1 else 'rows'} compressed) has bad pointers p "
                f"(need {major + 1} nondecreasing from 0 to at most nzmax = {nzmax})"
            )
        count = int(p[-1])
        outer = np.repeat(np.arange(major), np.diff(p))
        inner, values = i[:count], x[:count]
        rows, cols = (inner, outer) if nz == -1 else (outer, inner)
    else:
        raise ProblemFileError(f"{where}: matrix {name} has nz = {nz}; FCLIB knows >= 0 (triplet), -1 (CSC), -2 (CSR)")
    if count and (rows.min() < 0 or rows.max() >= m or cols.min() < 0 or cols.max() >= n):
        raise ProblemFileError(f"{where}: matrix {name} has an index outside its {m} x {n} size")
    return sp.coo_matrix((values, (rows, cols)), shape=(m, n)).tocsc()  # duplicates summed, as CSparse does


_SYMMETRIC = 1e-8
"""Relative asymmetry of a global file's W = H^T M^-1 H up to which it is the elimination's
rounding and W is symmetrized. Beyond it M itself is not symmetric, and W is kept as the file's
equations give it: an LMGC90 dump of Siconos' tests has M asymmetric by 1.5e-7 of its largest
entry, which its conditioning (1e7) makes 16 % of W -- symmetrizing would pose another problem."""


def _within(index, size):
    return index.size == 0 or (index.min() >= 0 and index.max() < size)


def _h5_vector(path, group, name, size):
    if name not in group:
        raise ProblemFileError(f"{path}: {group.name} lacks the vector {name!r}")
    try:
        value = np.asarray(group[name], float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ProblemFileError(f"{path}: {group.name}/{name} is not a numeric vector ({exc})") from None
    if value.size != size:
        raise ProblemFileError(f"{path}: {group.name}/{name} has {value.size} entries, expected {size}")
    if not np.all(np.isfinite(value)):
        k = int(np.flatnonzero(~np.isfinite(value))[0])
        raise ProblemFileError(f"{path}: {group.name}/{name}[{k}] = {float(value[k])!r} is not finite")
    return value


def _h5_text(item):
    value = item[()]
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0] if value.size else b""
    return value.decode("utf-8", "replace").rstrip("\x00") if isinstance(value, bytes) else str(value)


def read_fclib(path) -> FclibFile:
    """The 3D friction-contact problem of an FCLIB HDF5 file as an :class:`FclibFile`; a
    missing, corrupt or inconsistent file is a :class:`ProblemFileError` naming the file and the
    item.

    Reads an FCLIB HDF5 file (Acary, Brémond, Koziniec, Mercier and
    Dubois' Frictional Contact LIBrary; the layout of ``fclib.c``'s writers): ``/fclib_local``
    (``spacedim``; ``W`` a matrix group; ``vectors/q``, ``vectors/mu``) -- u = W r + q -- or
    ``/fclib_global`` (``M``, ``H``, optional ``G``; ``vectors/f``, ``w``, ``mu``, ``b``) -- M v =
    H r + G lam + f, G^T v + b = 0, u = H^T v + w -- reduced to the local problem by eliminating v
    and lam (one sparse LU of [M -G; G^T 0]): W = H^T X_H, q = H^T x_f + w (W symmetrized only where
    its asymmetry is rounding: ``_SYMMETRIC``). A matrix group holds ``nzmax``, ``m``, ``n``,
    ``nz`` and ``p``, ``i``, ``x`` in CSparse's forms: triplet (nz >= 0), compressed columns
    (nz = -1) or rows (nz = -2). A triplet's indices are read as CSparse keeps them, i the row and
    p the column indices: so Siconos and LMGC90 write the files of the FCLIB collection
    (``fclib.h``'s comment says the opposite, and a reader that followed it refused them: an index
    outside H's n x m size). Where only the comment's reading fits the matrix's size, the file is
    read that way; a square matrix whose indices fit both is read as CSparse. ``/info`` (title,
    description, math_info) and ``/solution`` (r, u, v, l) are read when present;
    ``/fclib_local/V``, ``R`` (a local problem with extra unknowns) are refused by name. Only 3D
    problems (spacedim 3) are read; every size is checked against the others.
    """
    import h5py
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    path = Path(path)
    if not path.is_file():
        raise ProblemFileError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    try:
        handle = h5py.File(path, "r")
    except OSError as exc:
        raise ProblemFileError(f"{path}: not a readable HDF5 file ({exc})") from None
    with handle:
        kinds = [k for k in ("fclib_local", "fclib_global") if k in handle]
        if not kinds:
            rolling = [k for k in ("fclib_local_rolling", "fclib_global_rolling") if k in handle]
            if rolling:  # FCLIB's rolling-friction problems (Siconos writes them): another law
                raise ProblemFileError(
                    f"{path}: /{rolling[0]} is an FCLIB rolling-friction problem; only 3D friction-contact "
                    "problems (/fclib_local, /fclib_global) are read"
                )
            raise ProblemFileError(f"{path}: neither /fclib_local nor /fclib_global (not an FCLIB problem)")
        kind = kinds[0]
        root = handle[kind]
        try:
            spacedim = int(np.asarray(root["spacedim"]).reshape(-1)[0])
        except (KeyError, IndexError, TypeError, ValueError):
            raise ProblemFileError(f"{path}: /{kind}/spacedim is missing or unreadable") from None
        if spacedim != 3:
            raise ProblemFileError(f"{path}: spacedim is {spacedim}; only 3D friction-contact problems are read")
        if "vectors" not in root:
            raise ProblemFileError(f"{path}: /{kind}/vectors is missing")
        vectors = root["vectors"]
        if kind == "fclib_local":
            for extra in ("V", "R"):
                if extra in root:
                    raise ProblemFileError(
                        f"{path}: /fclib_local/{extra} (a local problem with extra unknowns) is not read"
                    )
            if "W" not in root:
                raise ProblemFileError(f"{path}: /fclib_local/W is missing")
            W = _h5_matrix(path, root["W"], "W")
            if W.shape[0] != W.shape[1] or W.shape[0] % 3:
                raise ProblemFileError(f"{path}: W is {W.shape[0]} x {W.shape[1]}; expected square, 3 rows per contact")
            size = W.shape[0]
            q = _h5_vector(path, vectors, "q", size)
            mu = _h5_vector(path, vectors, "mu", size // 3)
            W = W.toarray()
        else:
            for name in ("M", "H"):
                if name not in root:
                    raise ProblemFileError(f"{path}: /fclib_global/{name} is missing")
            M, H = _h5_matrix(path, root["M"], "M"), _h5_matrix(path, root["H"], "H")
            n = M.shape[0]
            if M.shape[1] != n or H.shape[0] != n or H.shape[1] % 3:
                raise ProblemFileError(
                    f"{path}: M is {M.shape[0]} x {M.shape[1]} and H {H.shape[0]} x {H.shape[1]}; expected M "
                    "square and H with M's rows and 3 columns per contact"
                )
            size = H.shape[1]
            f = _h5_vector(path, vectors, "f", n)
            w = _h5_vector(path, vectors, "w", size)
            mu = _h5_vector(path, vectors, "mu", size // 3)
            if "G" in root:
                G = _h5_matrix(path, root["G"], "G")
                if G.shape[0] != n:
                    raise ProblemFileError(f"{path}: G has {G.shape[0]} rows, expected M's {n}")
                b = _h5_vector(path, vectors, "b", G.shape[1])
            else:
                G, b = sp.csc_matrix((n, 0)), np.zeros(0)
            p = G.shape[1]
            KKT = sp.bmat([[M, -G], [G.T, None]], format="csc") if p else M.tocsc()
            right = np.zeros((n + p, size + 1))
            right[:n, :size] = H.toarray()
            right[:n, size] = f
            right[n:, size] = -b
            try:
                with np.errstate(all="raise"):
                    X = spla.splu(KKT).solve(right)
            except (RuntimeError, FloatingPointError) as exc:
                raise ProblemFileError(
                    f"{path}: [M -G; G^T 0] is singular, the global problem cannot be reduced ({exc})"
                ) from None
            HT = H.T.tocsr()
            W = HT @ X[:n, :size]
            if np.abs(W - W.T).max(initial=0.0) <= _SYMMETRIC * np.abs(W).max(initial=0.0):
                W = 0.5 * (W + W.T)  # the elimination's rounding; otherwise M itself is not symmetric
            q = HT @ X[:n, size] + w
        info = {}
        if "info" in root:
            for key in ("title", "description", "math_info"):
                if key in root["info"]:
                    info[key] = _h5_text(root["info"][key])
        solution = {}
        if "solution" in handle:
            for key in ("r", "u", "v", "l"):
                if key in handle["solution"]:
                    solution[key] = np.asarray(handle["solution"][key], float).reshape(-1)
    try:
        problem = FrictionContactProblem.make(W, q, mu)
    except ValueError as exc:
        raise ProblemFileError(f"{path}: {exc}") from None
    return FclibFile(problem, "local" if kind == "fclib_local" else "global", info, solution)
