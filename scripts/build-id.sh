#!/bin/sh
# Prints the source revision vcpusim is built from, for app/build_id.h (Meson's vcs_tag runs it at
# every build and rewrites the header only when the text changes). A clean checkout gives
# `git describe --always --abbrev=12`; an edited one adds `-dirty-` and a hash of its diff against
# HEAD, so two different edits are two builds (records of one are not resumed by the other).
# Outside a git checkout it fails and Meson falls back to the project version.
src=${1:-.}
d=$(git -C "$src" describe --always --dirty --abbrev=12 2>/dev/null) || exit 1
case $d in
  *-dirty) echo "$d-$(git -C "$src" diff HEAD | git hash-object --stdin | cut -c1-8)" ;;
  *) echo "$d" ;;
esac
