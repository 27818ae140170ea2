"""How fast the command line answers: --help, `lcpdyn scenes`, one scene's page and usage errors,
each a fresh process (median of N, wall and CPU time), with the catalogue warm (as after the first
command) and cold (an empty cache folder: the first command after an install or a change of the
sources builds it). Interleaved: every round runs every command once.

    python benchmarks/cli_latency.py [--repeat 5] [--out results/cli_latency.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = {
    "--help": ["--help"],
    "run --help": ["run", "--help"],
    "scenes": ["scenes"],
    "scenes wheelset-hunting": ["scenes", "wheelset-hunting"],
    "usage error: unknown scene": ["run", "no-such-scene", "--out", "x.npz"],
    "usage error: --dt -1e-3": ["run", "wheel", "--dt", "-1e-3", "--out", "x.npz"],
    "usage error: unknown friction model": ["run", "wheel", "--friction", "nope", "--out", "x.npz"],
    "usage error: unknown --set name": ["run", "wheel", "--set", "nope=1", "--out", "x.npz"],
}


def timed(argv, env, cwd) -> tuple[float, float, int]:
    """(wall s, CPU s of the child, exit code) of ``python -m lcpdyn argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "lcpdyn", *argv], env=env, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def measure(repeat: int) -> dict:
    out = {name: {"warm_wall": [], "warm_cpu": [], "cold_wall": [], "cold_cpu": [], "exit": None} for name in COMMANDS}
    with tempfile.TemporaryDirectory() as work:
        warm = dict(os.environ, LCPDYN_CACHE=os.path.join(work, "warm"))
        timed(["--help"], warm, work)  # builds the warm catalogue
        for round_ in range(repeat):
            for index, (name, argv) in enumerate(COMMANDS.items()):
                wall, cpu, code = timed(argv, warm, work)
                out[name]["warm_wall"].append(wall)
                out[name]["warm_cpu"].append(cpu)
                out[name]["exit"] = code
                cold = dict(os.environ, LCPDYN_CACHE=os.path.join(work, f"cold-{round_}-{index}"))  # empty
                wall, cpu, _ = timed(argv, cold, work)
                out[name]["cold_wall"].append(wall)
                out[name]["cold_cpu"].append(cpu)
    return {
        name: {key: (statistics.median(values) if isinstance(values, list) else values) for key, values in row.items()}
        for name, row in out.items()
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="processes per command and cache state (median)")
    parser.add_argument("--out", default=None, help="a JSON file for the medians")
    args = parser.parse_args(argv)
    result = measure(args.repeat)
    print(f"{'command':38s} {'exit':>4s} {'warm wall':>10s} {'warm CPU':>9s} {'cold wall':>10s} {'cold CPU':>9s}")
    for name, row in result.items():
        print(
            f"{name:38s} {row['exit']:4d} {row['warm_wall']:9.3f}s {row['warm_cpu']:8.3f}s "
            f"{row['cold_wall']:9.3f}s {row['cold_cpu']:8.3f}s"
        )
    if args.out:
        with open(args.out, "w") as file:
            json.dump({"repeat": args.repeat, "python": sys.version, "medians": result}, file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
