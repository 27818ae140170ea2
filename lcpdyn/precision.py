"""How lcpdyn gets float64 from JAX -- deliberately, and without touching global state.

The engine needs double precision: the bristle stiffness k_T = 1e10 N/m of Peiret 2016
(Table 1) enters the step matrix next to forces of a few newtons, and float32 (JAX's default)
would lose the friction force entirely. lcpdyn does *not* flip ``jax_enable_x64`` for the whole
process at import time. Instead every trace and every call of the engine's JAX functions runs
inside :func:`float64`, JAX's scoped ``enable_x64`` context, so user code that imports lcpdyn
keeps its own precision setting. (Measured cost of entering the context per call: ~0.2 µs.)
If you call the compiled kinematics yourself, do it inside ``with lcpdyn.precision.float64():``.
"""

from __future__ import annotations

try:  # JAX >= 0.8: the configuration state ``jax.enable_x64`` is itself the scoped context
    from jax import enable_x64 as _enable_x64
except ImportError:  # older JAX: the same context under jax.experimental (removed in 0.10)
    from jax.experimental import enable_x64 as _enable_x64

__all__ = ["float64", "float64_arrays", "float64_callback"]


def float64():
    """Context manager: JAX computes in float64 inside the ``with`` block only (JAX's own
    scoped ``enable_x64``, thread-local; the process-wide ``jax_enable_x64`` is never set)."""
    return _enable_x64(True)


def float64_arrays(owner: str, **arrays):
    """The ``arrays`` (name -> array-like) as JAX arrays, in the order given; a TypeError names
    ``owner`` and the first that is not float64 (made outside :func:`float64`, JAX's default
    is float32)."""
    import jax.numpy as jnp

    out = []
    for name, value in arrays.items():
        value = jnp.asarray(value)
        if value.dtype != jnp.float64:
            raise TypeError(f"{owner}: {name} has dtype {value.dtype}; call it inside lcpdyn.precision.float64()")
        out.append(value)
    return out


def float64_callback(function, shape: tuple, *args, dtype=None):
    """``jax.pure_callback(function, array of shape, *args)`` (``vmap_method="sequential"``)
    whose float64 arguments and answer cross between XLA and the host as their bytes. JAX
    converts a callback's arrays with the float64 setting of the thread that runs it, and
    :func:`float64` is scoped to the caller's thread: inside a compiled loop XLA may run the
    callback on a thread of its own, where a float64 argument would arrive rounded to float32 (a
    run's central difference then measured that rounding, 3 % at e = 1e-6) and a float64 answer
    would be refused. Bytes are not converted. ``dtype``: the answer's, float64 by default."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    shape = tuple(shape)
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    doubles = [getattr(a, "dtype", None) == jnp.float64 for a in args]
    shapes = [np.shape(a) for a in args]

    def on_host(*arrays):
        arrays = [
            np.ascontiguousarray(a).view(np.float64).reshape(s) if d else np.asarray(a)
            for a, d, s in zip(arrays, doubles, shapes, strict=True)
        ]
        out = np.ascontiguousarray(function(*arrays), dtype=dtype).reshape(shape)
        return out.view(np.uint8).reshape(*shape, dtype.itemsize)

    sent = [jax.lax.bitcast_convert_type(a, jnp.uint8) if d else a for a, d in zip(args, doubles, strict=True)]
    answer = jax.ShapeDtypeStruct((*shape, dtype.itemsize), jnp.uint8)
    raw = jax.pure_callback(on_host, answer, *sent, vmap_method="sequential")
    return jax.lax.bitcast_convert_type(raw, dtype).reshape(shape)  # (..., 8) bytes -> (...)
