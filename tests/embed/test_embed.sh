#!/usr/bin/env bash
# Installs the build into a temporary root, then compiles and runs embed.cpp with
# only `pkg-config --cflags --libs ember`, as an embedding program would.
set -euo pipefail
build="$1"; src="$2"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --destdir "$root" --no-rebuild --quiet
pcdir="$(dirname "$(find "$root" -name ember.pc | head -n1)")"
libdir="$(dirname "$(find "$root" -name 'libember.so' | head -n1)")"
export PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_SYSROOT_DIR="$root"
c++ -std=c++20 "$src/embed.cpp" $(pkg-config --cflags --libs ember) -Wl,-rpath,"$libdir" -o "$root/app"
"$root/app"
