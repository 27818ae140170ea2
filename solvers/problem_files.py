"""Readers of third-party frictional-contact problem files, returning the front door's
:class:`~solvers.friction_contact.FrictionContactProblem` (u = W r + b, unknowns per contact
ordered (normal, t1, t2), Coulomb cone of mu per contact).

``read_siconos_dat(path)`` reads Siconos' plain-text dump of a ``FrictionContactProblem`` (the
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

Siconos' q is lcpdyn's b. Every count, index and size is checked against the others before it is
used, every number must parse and be finite, and mu >= 0 (through
:meth:`FrictionContactProblem.make`); a bad or truncated file is a ``ValueError``
that names the file, the item and the position (the token's index) where it went wrong.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .friction_contact import FrictionContactProblem

__all__ = ["read_siconos_dat", "ProblemFileError"]


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
    """The 3D friction-contact problem in a Siconos ``.dat`` dump (module docstring) as a
    :class:`~solvers.friction_contact.FrictionContactProblem` (W dense, float64)."""
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
