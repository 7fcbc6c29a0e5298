#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Lint (suite `lint`): dependencies run one way, app -> {policies, guest} -> hypervisor ->
# {topology, sim}; policies and guest never include each other; guest sees no topology; only
# app/ includes yaml-cpp. Prints every offending include and fails if there is one.
set -u
root=${1:-.}
cd "$root" || exit 2
fail=0
check() { # dir, forbidden include prefixes...
  local dir=$1; shift
  local pat hits
  for pat in "$@"; do
    hits=$(grep -rnE "#include[[:space:]]*[\"<](\.\./)*${pat}/" "$dir" --include='*.h' --include='*.cpp' --include='*.in' 2>/dev/null)
    if [ -n "$hits" ]; then
      echo "layering: $dir/ must not include $pat/:"
      echo "$hits"
      fail=1
    fi
  done
}
check sim topology hypervisor policies guest app
check topology sim hypervisor policies guest app
check hypervisor policies guest app
check policies guest app
check guest policies app topology
yaml=$(grep -rnE '#include[[:space:]]*<yaml-cpp/' sim topology hypervisor policies guest 2>/dev/null)
if [ -n "$yaml" ]; then
  echo "layering: only app/ reads YAML:"
  echo "$yaml"
  fail=1
fi
if [ $fail -eq 0 ]; then echo "layering: ok"; fi
exit $fail
