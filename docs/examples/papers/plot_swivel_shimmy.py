"""
Den Hartog's swivel wheel (Schwab–Meijaard 2003 Sec. 3.1, Figs. 1–2)
====================================================================

A swivelling wheel with I = 0.21 m l²: lcpdyn linearizes its non-holonomic equations (JAX
Jacobians) and draws the root locus over the centre-of-mass position a/l. Motion is stable for
0.3 < a/l < 0.7, and the characteristic polynomial equals the paper's Eq. (31) to rounding.
"""

from scenes import swivel_shimmy

numbers = swivel_shimmy.report(".")
low, high = numbers["stability_boundaries_a_over_l"]
print(f"stable for {low:.6f} < a/l < {high:.6f} (paper: {numbers['expected'][0]} < a/l < {numbers['expected'][1]})")
print(
    f"largest difference of the characteristic polynomial's coefficients from Eq. (31): "
    f"{numbers['max_coefficient_difference_vs_eq31']:.1e}"
)
