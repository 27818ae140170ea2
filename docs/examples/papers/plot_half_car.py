r"""
Half car with traction saturation (Ikoki 2022 Secs. 3–4, Figs. 6–9)
===================================================================

A half car (chassis, two trailing arms, two wheels on compliant tyres) driven on its rear wheel
over a road whose grip drops from 0.9 to 0.15 on a slippery stretch, at three peak torques. The
engine's formulation (the traction a bounded friction row, \|λ_T\| ≤ μ N as a bound of the
step's problem) beside the paper's Udwadia–Kalaba formulation with a saturated traction: at
150 N m the rear wheel keeps its grip but for a short slip; at 550 and 700 N m it spins on the
slippery stretch while the free front wheel rolls on.

.. note:: This reproduction takes about two minutes, so this page shows stored results
   (the first line of the output says which run made them); ``lcpdyn reproduce half-car``
   runs it, and ``./dev.sh gallery-store`` stores it again.
"""

from _stored import show

numbers = show("half-car")
print(
    f"{'T_max':>6} {'max |λ_T|/μN':>13} {'traction saturated':>19} {'rear spin excess, engine / UK':>31} "
    f"{'final speed, engine / UK':>25}"
)
for case, run in numbers.items():
    print(
        f"{case.split('=')[1]:>6} {run['engine_max_friction_over_mu_N']:>13.6f} "
        f"{run['engine_traction_saturated_s']:>17.3f} s "
        f"{run['engine_rear_max_spin_excess_m_per_s']:>14.2f} / {run['uk_rear_max_spin_excess_m_per_s']:.2f} m/s "
        f"{run['engine_final_speed']:>13.3f} / {run['uk_final_speed']:.3f} m/s"
    )
