#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Set-up (scripts/setup.sh) and the whole test suite. The last line is the plain summary
# `N passed, N failed` taken from meson's test summary, so a run that tested nothing shows.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
build=${BUILD_DIR:-build}
log=$(mktemp)
# UBSan findings must fail the test that triggers them, not scroll past.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
meson test -C "$build" --print-errorlogs --num-processes "$(nproc)" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
count() { awk -v k="$1" '$1 == k":" {print $2; exit}' "$log"; }
ok=$(count Ok); fail=$(count Fail); timeout=$(count Timeout); xpass=$(count "Unexpected Pass")
passed=${ok:-0}
failed=$(( ${fail:-0} + ${timeout:-0} ))
rm -f "$log"
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "${passed} passed, ${failed} failed"
exit "$rc"
