"""How lcpdyn hands its programs to XLA: :func:`jit` is ``jax.jit`` with the compiler options of
:func:`compiler_options`.

XLA:CPU's default code generator for fused loops (its "fusion emitters") takes 10–30 % longer to
compile lcpdyn's programs than the one it replaces, and the programs run no faster (measured on
the compiled loop of the Peiret wheel, a run's gradient and the wheelset's linearization; the
documentation's Benchmarks page has the table). lcpdyn therefore compiles its own programs with
the older generator, where the installed XLA still has it: the option is per program, so a
user's own JAX code keeps XLA's defaults. Where a later XLA drops the option, lcpdyn compiles
with the defaults instead (:func:`compiler_options` is empty)."""

from __future__ import annotations

import functools

import jax

__all__ = ["FASTER_COMPILATION", "compiler_options", "jit"]

FASTER_COMPILATION = {"xla_cpu_use_fusion_emitters": False}
"""The XLA options lcpdyn asks for (module docstring)."""


@functools.cache
def compiler_options() -> dict:
    """:data:`FASTER_COMPILATION` if the installed XLA takes it (tried once on a one-operation
    program), else {}."""
    try:
        jax.jit(lambda x: x + 1.0, compiler_options=FASTER_COMPILATION).lower(1.0).compile()
    except Exception:  # an XLA without the option: "No such compile option"
        return {}
    return dict(FASTER_COMPILATION)


def jit(function, **options):
    """``jax.jit(function, **options)`` with :func:`compiler_options`."""
    return jax.jit(function, compiler_options=compiler_options(), **options)
