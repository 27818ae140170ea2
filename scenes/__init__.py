"""Ready-made scenes reproducing the source papers (the Peiret 2016 wheel, the rolling disk,
shimmy, ...). They arrive with the engine; today the solver test scenes live in
:mod:`solvers.library`."""
