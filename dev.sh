#!/usr/bin/env bash
# lcpdyn's one-stop set-up and run script (see README, "Two commands").
#   ./dev.sh demo   set up if needed, then run the main job
#   ./dev.sh test   set up if needed, check lint and format (ruff), then run the test suite on both
#                   stacks: the Siconos venv (.venv, NumPy < 2) and a plain venv with the newest
#                   releases (.venv-current)
#   ./dev.sh bench [solvers|wheel|scale|fc3d|approximations]   the benchmarks (solvers and
#                   wheel by default; scale, with MuJoCo as the peer, takes ~30 min; fc3d, the 34
#                   third-party exact-Coulomb problems against Siconos, ~30 min; approximations,
#                   the friction models scored on those problems, ~45 min), results in results/
#   ./dev.sh reproduce   every paper check and figure besides the wheel comparison (results/, ~10 min)
# Set-up (idempotent): Debian's python3-siconos through apt where apt is usable (root or
# sudo), a venv at .venv made from /usr/bin/python3 with --system-site-packages (so Siconos
# is visible), NumPy < 2 (Siconos is built against NumPy 1.x), and lcpdyn installed editable
# with its test extras. Without apt, the venv uses any python3 and current NumPy; Siconos
# tests then skip, except under CI=true, where they fail.
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
CURRENT=.venv-current

have_siconos() { /usr/bin/python3 -c "import siconos.numerics" >/dev/null 2>&1; }

install_siconos() {
  have_siconos && return 0
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null && sudo="sudo -n" || return 1
  fi
  command -v apt-get >/dev/null 2>&1 || return 1
  echo "dev.sh: installing Debian's python3-siconos with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-siconos python3-venv >/dev/null
  have_siconos
}

setup() {
  local stamp=$VENV/.lcpdyn-setup
  if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ "$stamp" -nt dev.sh ]; then
    return 0
  fi
  local pins=()
  if install_siconos; then
    [ -x $VENV/bin/python ] || /usr/bin/python3 -m venv --system-site-packages $VENV
    pins=("numpy<2")
  else
    echo "dev.sh: Siconos unavailable (no apt or no root); its cross-checks will skip" >&2
    [ -x $VENV/bin/python ] || python3 -m venv $VENV
  fi
  if [ ${#pins[@]} -gt 0 ]; then
    $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[test]" "${pins[@]}"
    # coal (the collision extra) beside NumPy 1: its wheels' metadata ask NumPy >= 2 (cmeel-boost
    # is built against it), but extensions built against NumPy 2 run on 1.x, and the collision
    # tests prove it in this leg. Its packages are named here and installed without the resolver.
    $VENV/bin/python -m pip install -q --disable-pip-version-check --no-deps \
      coal libcoal eigenpy cmeel cmeel-boost cmeel-assimp cmeel-octomap cmeel-qhull cmeel-zlib
  else
    $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[test,collision]"
  fi
  touch "$stamp"
}

# The second stack: a plain venv (no system packages, so no Siconos) with the newest releases of
# every dependency -- NumPy 2, current JAX -- installed the way a user installs lcpdyn.
setup_current() {
  local stamp=$CURRENT/.lcpdyn-setup
  if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ "$stamp" -nt dev.sh ]; then
    return 0
  fi
  [ -x $CURRENT/bin/python ] || python3 -m venv $CURRENT
  $CURRENT/bin/python -m pip install -q --disable-pip-version-check --upgrade ".[test,collision]"
  touch "$stamp"
}

# ruff lint and format check (configured in pyproject.toml), with the given venv's ruff.
lint() {
  echo "dev.sh: ruff check and ruff format --check" >&2
  "$1"/bin/python -m ruff check --quiet . && "$1"/bin/python -m ruff format --check --quiet .
}

# Lint, then both stacks in turn (LCPDYN_LEGS="siconos current" by default); fails if any fails.
run_tests() {
  local status=0 leg start
  case "${LCPDYN_LEGS:-siconos current}" in
    siconos*) setup; lint $VENV || status=1 ;;
    *) setup_current; lint $CURRENT || status=1 ;;
  esac
  for leg in ${LCPDYN_LEGS:-siconos current}; do
    start=$(date +%s)
    case "$leg" in
      siconos) setup; echo "dev.sh: test leg 'siconos' ($($VENV/bin/python -c 'import numpy, jax; print("NumPy", numpy.__version__, "JAX", jax.__version__)'))" >&2
               $VENV/bin/python -m pytest "$@" || status=1 ;;
      current) setup_current; echo "dev.sh: test leg 'current' ($($CURRENT/bin/python -c 'import numpy, jax; print("NumPy", numpy.__version__, "JAX", jax.__version__)'))" >&2
               LCPDYN_STACK=current $CURRENT/bin/python -m pytest "$@" || status=1 ;;
      *) echo "dev.sh: unknown test leg '$leg' (siconos, current)" >&2; return 2 ;;
    esac
    echo "dev.sh: test leg '$leg' took $(( $(date +%s) - start )) s" >&2
  done
  return $status
}

cmd=${1:-}
shift || true
case "$cmd" in
  setup) setup ;;
  demo) setup; exec $VENV/bin/python -m lcpdyn demo "$@" ;;
  reproduce) setup; exec $VENV/bin/python -m lcpdyn reproduce rolling-disk swivel-shimmy caster-shimmy road-wheel incline-pendulum half-car wheelset-klingel wheelset-hunting "$@" ;;
  test) run_tests "$@" ;;
  bench)
    setup
    case "${1:-all}" in
      solvers) shift; exec $VENV/bin/python benchmarks/bench_solvers.py "$@" ;;
      wheel) shift; exec $VENV/bin/python benchmarks/bench_wheel.py "$@" ;;
      fc3d) shift; exec $VENV/bin/python benchmarks/bench_fc3d.py "$@" ;;
      approximations) shift; exec $VENV/bin/python benchmarks/bench_fc3d_approximations.py "$@" ;;
      scale) shift; $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[bench]" 2>/dev/null \
               || echo "dev.sh: MuJoCo could not be installed; bench_scale skips its column" >&2
             exec $VENV/bin/python benchmarks/bench_scale.py "$@" ;;
      all) $VENV/bin/python benchmarks/bench_solvers.py && exec $VENV/bin/python benchmarks/bench_wheel.py ;;
      *) echo "usage: ./dev.sh bench [solvers|wheel|scale|fc3d|approximations|all] [args...]" >&2; exit 2 ;;
    esac ;;
  *) echo "usage: ./dev.sh {demo|test|bench|reproduce|setup} [args...]" >&2; exit 2 ;;
esac
