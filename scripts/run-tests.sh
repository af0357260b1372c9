#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: every Meson test of the
# release build, then the unit tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer. Ends with one line: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh --test-data || exit 1

status=0
run_suite() {  # build dir, meson setup args...
  local dir=$1
  shift
  [[ -d $dir ]] || meson setup "$dir" "$@" || return 1
  # With SUITES, meson test builds just what the chosen tests need.
  [[ -n ${SUITES:-} ]] || ninja -C "$dir" || return 1
  meson test -C "$dir" --print-errorlogs --num-processes 2 ${SUITES:-} || status=1
}

run_suite build || status=1
# The sanitizer build runs the unit and fuzz suites, the daemon test (the
# real heterod against hostile clients) and the driver contract but for its
# OPENCL instances (suite 'sanitize'): the conformance and model suites are
# the same code on larger inputs, too slow under ASan on 2 cores. It is also
# the CPU-only configuration a box without a GPU builds (no OpenCL, no Level
# Zero), so that configuration is built and its CPU tests run on every change.
#
# Compiled -Og -g1 with assertions on: on 2 cores -O2 -g took 34 minutes to
# build here and -Og -g1 11, for tests that then take seconds more. -g1 keeps
# the line tables the sanitizers' reports print.
SUITES="--suite unit --suite fuzz --suite sanitize" run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false \
  -Doptimization=g -Ddebug=false -Db_ndebug=false -Dc_args=-g1 -Dcpp_args=-g1 \
  -Dopencl=disabled -Dlevel_zero=disabled || status=1

python3 scripts/test_summary.py build/meson-logs/testlog.json build-asan/meson-logs/testlog.json
exit $status
