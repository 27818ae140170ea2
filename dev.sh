#!/usr/bin/env bash
# lcpdyn's one-stop set-up and run script (see README, "Two commands").
#   ./dev.sh demo   set up if needed, then run the main job
#   ./dev.sh test   set up if needed, check lint and format (ruff), then run the test suite on both
#                   stacks at once: the Siconos venv (.venv, NumPy < 2) and a plain venv with the
#                   newest releases (.venv-current), which then builds the documentation site
#   ./dev.sh docs   the documentation site (Sphinx; warnings, broken references and docstring
#                   errors fail it) into docs/_build/html
#   ./dev.sh bench [solvers|wheel|scale|sweep|fc3d|approximations|beam|gradient]   the benchmarks (solvers and
#                   wheel by default; scale, with MuJoCo as the peer, takes ~30 min; fc3d, the 34
#                   third-party exact-Coulomb problems against Siconos, ~30 min; approximations,
#                   the friction models scored on those problems, ~45 min), results in results/
#   ./dev.sh reproduce   every paper check and figure besides the wheel comparison (results/, ~10 min)
#   ./dev.sh gallery-store [SCENE ...]   runs the paper reproductions that take minutes and stores
#                   their figures and numbers for the documentation's gallery
#                   (docs/examples/papers/stored/, ~25 min for all)
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
    $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[test,models,robots]" "${pins[@]}"
    # coal (the collision extra) beside NumPy 1: its wheels' metadata ask NumPy >= 2 (cmeel-boost
    # is built against it), but extensions built against NumPy 2 run on 1.x, and the collision
    # tests prove it in this leg. Its packages are named here and installed without the resolver.
    $VENV/bin/python -m pip install -q --disable-pip-version-check --no-deps \
      coal libcoal eigenpy cmeel cmeel-boost cmeel-assimp cmeel-octomap cmeel-qhull cmeel-zlib
  else
    $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[test,collision,models,robots]"
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
  $CURRENT/bin/python -m pip install -q --disable-pip-version-check --upgrade ".[test,collision,viewer,models,robots,docs]"
  touch "$stamp"
}

# The documentation site from docs/ (docs/conf.py) with the current stack's Sphinx: -W makes every
# warning an error (a docstring that is not valid reStructuredText, a page's bad Markdown), -n every
# reference that resolves to nothing; the whole build runs (--keep-going) so that all are listed.
build_docs() {
  local begun
  begun=$(date +%s)
  echo "dev.sh: documentation site (Sphinx, -W -n) into docs/_build/html"
  rm -rf docs/_build/html docs/_build/doctrees docs/gallery  # every gallery script runs again
  # the gallery's scripts share the current test leg's persistent XLA cache (tests/conftest.py):
  # the scenes they build with their defaults are the programs the tests compiled
  if JAX_PLATFORMS=cpu JAX_COMPILATION_CACHE_DIR="$PWD/.cache/jax-current" JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0.2 \
     OPENBLAS_NUM_THREADS=1 MPLBACKEND=Agg $CURRENT/bin/python -m sphinx -b html -W -n --keep-going -q \
       -d docs/_build/doctrees docs docs/_build/html; then
    echo "dev.sh: documentation built in $(( $(date +%s) - begun )) s: open docs/_build/html/index.html"
  else
    echo "dev.sh: the documentation build failed (its warnings above)" >&2
    return 1
  fi
}

# ruff lint and format check (configured in pyproject.toml), with the given venv's ruff.
lint() {
  echo "dev.sh: ruff check and ruff format --check" >&2
  "$1"/bin/python -m ruff check --quiet . && "$1"/bin/python -m ruff format --check --quiet .
}

# One test leg: its set-up is done; its pytest with the given arguments.
run_leg() {
  local leg=$1
  shift
  case "$leg" in
    siconos) echo "dev.sh: test leg 'siconos' ($($VENV/bin/python -c 'import numpy, jax; print("NumPy", numpy.__version__, "JAX", jax.__version__)'))"
             $VENV/bin/python -m pytest "$@" ;;
    current) echo "dev.sh: test leg 'current' ($($CURRENT/bin/python -c 'import numpy, jax; print("NumPy", numpy.__version__, "JAX", jax.__version__)'))"
             local code=0
             LCPDYN_STACK=current $CURRENT/bin/python -m pytest "$@" || code=$?
             build_docs || code=1  # the site is built on the stack a user installs
             return $code ;;
  esac
}

# Lint, then the legs (LCPDYN_LEGS="siconos current" by default); fails if any fails. Two legs run
# at the same time, one per core (BLAS on one thread in each), each into its own log, printed
# whole when both are done; LCPDYN_SERIAL=1 runs them one after the other on the terminal.
run_tests() {
  local status=0 leg start legs=(${LCPDYN_LEGS:-siconos current})
  for leg in "${legs[@]}"; do
    case "$leg" in
      siconos|current) ;;
      *) echo "dev.sh: unknown test leg '$leg' (siconos, current)" >&2; return 2 ;;
    esac
  done
  # the legs' set-ups at the same time (each is mostly downloads and unpacking; on a fresh
  # machine one after the other took 11 minutes), each into its own log, shown if it fails
  local setup_logs setup_pids=() setup_failed=0
  setup_logs=$(mktemp -d)
  for leg in "${legs[@]}"; do
    case "$leg" in
      siconos) setup >"$setup_logs/$leg.log" 2>&1 & ;;
      current) setup_current >"$setup_logs/$leg.log" 2>&1 & ;;
    esac
    setup_pids+=($!)
  done
  for i in "${!legs[@]}"; do
    if ! wait "${setup_pids[$i]}"; then
      echo "dev.sh: the set-up of test leg '${legs[$i]}' failed:" >&2
      cat "$setup_logs/${legs[$i]}.log" >&2
      setup_failed=1
    else
      cat "$setup_logs/${legs[$i]}.log" >&2
    fi
  done
  rm -rf "$setup_logs"
  [ $setup_failed = 0 ] || return 1
  # both legs in one command: the tests marked one_leg (long reproductions, whose claims are the
  # physics) are dealt between them, each run once; the library's modules' tests run on both stacks
  export LCPDYN_BOTH_LEGS=0
  if [[ " ${legs[*]} " == *" siconos "* && " ${legs[*]} " == *" current "* ]]; then
    export LCPDYN_BOTH_LEGS=1
  fi
  case "${legs[0]}" in
    siconos) lint $VENV || status=1 ;;
    *) lint $CURRENT || status=1 ;;
  esac
  if [ ${#legs[@]} -gt 1 ] && [ "${LCPDYN_SERIAL:-0}" != 1 ]; then
    local logs pids=() codes=()
    logs=$(mktemp -d)
    start=$(date +%s)
    echo "dev.sh: test legs ${legs[*]} at once (logs follow when all are done; LCPDYN_SERIAL=1 for one at a time)" >&2
    for leg in "${legs[@]}"; do
      (
        export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
        begun=$(date +%s) code=0
        run_leg "$leg" "$@" || code=$?
        echo "dev.sh: test leg '$leg' took $(( $(date +%s) - begun )) s"
        exit $code
      ) >"$logs/$leg.log" 2>&1 &
      pids+=($!)
    done
    for i in "${!legs[@]}"; do
      wait "${pids[$i]}" && codes[$i]=0 || codes[$i]=$?
    done
    for i in "${!legs[@]}"; do
      echo "===== test leg '${legs[$i]}' (exit ${codes[$i]}) ====="
      cat "$logs/${legs[$i]}.log"
      [ "${codes[$i]}" = 0 ] || status=1
    done
    rm -rf "$logs"
    echo "dev.sh: test legs took $(( $(date +%s) - start )) s together" >&2
    return $status
  fi
  for leg in "${legs[@]}"; do
    start=$(date +%s)
    run_leg "$leg" "$@" || status=1
    echo "dev.sh: test leg '$leg' took $(( $(date +%s) - start )) s" >&2
  done
  return $status
}

cmd=${1:-}
shift || true
case "$cmd" in
  setup) setup ;;
  demo) setup; exec $VENV/bin/python -m lcpdyn demo "$@" ;;
  reproduce) setup; exec $VENV/bin/python -m lcpdyn reproduce rolling-disk swivel-shimmy caster-shimmy road-wheel incline-pendulum beam-tyre-shimmy half-car wheelset-klingel wheelset-hunting "$@" ;;
  test) run_tests "$@" ;;
  gallery-store) setup; exec env MPLBACKEND=Agg OPENBLAS_NUM_THREADS=1 $VENV/bin/python docs/examples/papers/_stored.py "$@" ;;
  docs) setup_current; build_docs ;;
  bench)
    setup
    case "${1:-all}" in
      solvers) shift; exec $VENV/bin/python benchmarks/bench_solvers.py "$@" ;;
      wheel) shift; $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[bench]" 2>/dev/null \
               || echo "dev.sh: MuJoCo could not be installed; bench_wheel skips its peer" >&2
             exec $VENV/bin/python benchmarks/bench_wheel.py "$@" ;;
      fc3d) shift; exec $VENV/bin/python benchmarks/bench_fc3d.py "$@" ;;
      gradient) shift; exec $VENV/bin/python benchmarks/bench_gradient.py "$@" ;;
      approximations) shift; exec $VENV/bin/python benchmarks/bench_fc3d_approximations.py "$@" ;;
      beam) shift; $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[bench]" 2>/dev/null \
               || echo "dev.sh: MuJoCo could not be installed; bench_beam skips its peer" >&2
            exec $VENV/bin/python benchmarks/bench_beam.py "$@" ;;
      scale) shift; $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[bench]" 2>/dev/null \
               || echo "dev.sh: MuJoCo could not be installed; bench_scale skips its column" >&2
             exec $VENV/bin/python benchmarks/bench_scale.py "$@" ;;
      sweep) shift; $VENV/bin/python -m pip install -q --disable-pip-version-check -e ".[bench]" 2>/dev/null \
               || echo "dev.sh: MuJoCo could not be installed; bench_sweep reports no ratio" >&2
             exec $VENV/bin/python benchmarks/bench_sweep.py "$@" ;;
      all) $VENV/bin/python benchmarks/bench_solvers.py && exec $VENV/bin/python benchmarks/bench_wheel.py ;;
      *) echo "usage: ./dev.sh bench [solvers|wheel|scale|sweep|fc3d|approximations|beam|gradient|all] [args...]" >&2; exit 2 ;;
    esac ;;
  *) echo "usage: ./dev.sh {demo|test|docs|bench|reproduce|gallery-store|setup} [args...]" >&2; exit 2 ;;
esac
