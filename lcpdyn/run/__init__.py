"""A run of a simulation: the loop over steps, its records and file, its signals, progress and errors."""
