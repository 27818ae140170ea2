"""How a trajectory's HDF5 file is laid out in chunks (:class:`~lcpdyn.trajectory_writer.TrajectoryWriter`):
chunk sizes and cache, the detected-contact datasets, and a block's detected contacts checked
before they are written."""

from __future__ import annotations

import numpy as np

from .trajectory_format import (
    _COUNT_DTYPE,
    _COUNT_FIELD,
    _RECORD_LAYOUT,
    _STEP_LAYOUT,
    _fits,
    _numeric,
    detected_problem,
    no_detected,
)


def chunk_bytes(chunk_steps: int, n_bodies: int, n_contacts: int) -> tuple[int, int]:
    """Bytes of one chunk of every per-step dataset, and of one chunk of every record dataset."""
    sizes = {"bodies": n_bodies, "contacts": n_contacts}
    steps = sum(
        chunk_steps * int(np.prod([max(sizes.get(d, d), 1) for d in trailing])) * np.dtype(dtype).itemsize
        for trailing, dtype in _STEP_LAYOUT.values()
    )
    records = 4 * chunk_steps * sum(np.dtype(d).itemsize * int(np.prod(t)) for t, d in _RECORD_LAYOUT.values())
    return steps, records


def chunk_cache(chunk_steps: int, n_bodies: int, n_contacts: int) -> dict:
    """h5py.File options: room in the chunk cache for one chunk of every per-step dataset (twice
    over), so that appending a block never reads a chunk back from the file."""
    nbytes = sum(chunk_bytes(chunk_steps, n_bodies, n_contacts))
    return {"rdcc_nbytes": max(1 << 20, 2 * nbytes), "rdcc_nslots": 1009}


def create_detected(file, steps: int, chunk_steps: int, compression) -> None:
    """The detected-contact datasets of a file of ``steps`` steps without any (a new file, or one
    of format version 1 being continued): ``detected_count`` along the step axis, the flat fields
    along the record axis."""
    file.create_dataset(
        _COUNT_FIELD, data=np.zeros(steps, _COUNT_DTYPE), maxshape=(None,), chunks=(chunk_steps,),
        fletcher32=True, compression=compression, shuffle=compression is not None,
    )  # fmt: skip
    for name, (trailing, dtype) in _RECORD_LAYOUT.items():
        file.create_dataset(
            name, shape=(0, *trailing), dtype=dtype, maxshape=(None, *trailing), chunks=(4 * chunk_steps, *trailing),
            fletcher32=True, compression=compression, shuffle=compression is not None,
        )  # fmt: skip


def checked_detected(detected: dict | None, k: int) -> dict:
    """``detected`` (:meth:`TrajectoryWriter.append`) of a block of ``k`` steps, checked and cast
    to the file's dtypes; no detected contact where None."""
    if detected is None:
        return no_detected(k)
    if not isinstance(detected, dict):
        raise TypeError(f"detected must be a dict of arrays, got {type(detected).__name__}")
    unknown = [name for name in detected if name not in (_COUNT_FIELD, *_RECORD_LAYOUT)]
    if unknown:
        raise ValueError(f"detected has unknown fields {unknown}")
    arrays = {name: _numeric(name, value) for name, value in detected.items()}
    problem = detected_problem(arrays, k) if arrays else f"detected has none of its fields ({_COUNT_FIELD}, ...)"
    if problem is not None:
        raise ValueError(f"detected: {problem}")
    out = {}
    for name, value in arrays.items():
        dtype = _COUNT_DTYPE if name == _COUNT_FIELD else _RECORD_LAYOUT[name][1]
        try:
            out[name] = _fits(value, np.dtype(dtype))
        except ValueError as exc:
            raise ValueError(f"{name!r}: {exc}") from None
    return out
