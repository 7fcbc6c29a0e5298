#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages vcpusim needs (only those missing), then configures and builds
# it. Idempotent: run it again after a pull. Environment: BUILD_DIR (default build), BUILDTYPE
# (default release) and MESON_ARGS (extra `meson setup` options, e.g. -Db_sanitize=address,undefined).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ meson ninja-build pkg-config libboost-graph-dev libeigen3-dev libyaml-cpp-dev
          libgtest-dev libgmock-dev libcli11-dev libfmt-dev nlohmann-json3-dev libbenchmark-dev
          gnuplot-nox openmpi-bin libopenmpi-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=${BUILD_DIR:-build}
# shellcheck disable=SC2086
if [ -f "$build/build.ninja" ]; then
  meson setup --reconfigure "$build" --buildtype="${BUILDTYPE:-release}" ${MESON_ARGS:-} >/dev/null
else
  meson setup "$build" --buildtype="${BUILDTYPE:-release}" ${MESON_ARGS:-} >/dev/null
fi
ninja -C "$build" -j"$(nproc)"
