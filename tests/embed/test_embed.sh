#!/usr/bin/env bash
# The installed package, checked as an embedder meets it: installs the build into a
# temporary root, then
#   - checks the library's soname and exported symbols (Ember's API only: no
#     nlohmann, no kernels) and that `pkg-config --cflags ember` names only
#     Ember's own include folder;
#   - builds embed.cpp and the C API example (tests/capi/example.c) with nothing but
#     `pkg-config --cflags --libs ember`, and runs them on the seed network;
#   - removes the shared library and builds embed.cpp again with
#     `pkg-config --static`, as a static consumer links.
# Usage: test_embed.sh <build dir> <this folder> <seed_net.safetensors>
set -euo pipefail
build="$1"; src="$2"; weights="$3"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

meson install -C "$build" --destdir "$root" --no-rebuild --quiet
pcdir="$(dirname "$(find "$root" -name ember.pc | head -n1)")"
lib="$(find "$root" -name 'libember.so.*.*.*' | head -n1)"
libdir="$(dirname "$lib")"
export PKG_CONFIG_PATH="$pcdir"
# ember.pc names its folders from ${prefix}; moving the prefix into the temporary root
# relocates Ember's own paths and leaves those of its dependencies (CUDA, MPI) alone.
prefix="$(pkg-config --variable=prefix ember)"
pc() { pkg-config --define-variable=prefix="$root$prefix" "$@" ember; }

# The soname carries the major version; libember.so and libember.so.0 link to the file.
soname="$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
[ "$soname" = "libember.so.0" ] || fail "soname is '$soname', expected libember.so.0"
[ "$(readlink -f "$libdir/libember.so")" = "$(readlink -f "$lib")" ] || fail "libember.so does not link to $lib"

# Exported symbols: every one is Ember's (the ember namespace, the C API's ember_
# functions, typeinfo/vtables of Ember's classes, standard templates instantiated on
# Ember's types) besides EMBER_0, the version node of libember.map.
nm -D --defined-only --demangle "$lib" | awk '{ $1 = ""; $2 = ""; sub(/^  /, ""); print }' > "$root/symbols.txt"
count="$(wc -l < "$root/symbols.txt")"
if grep -q nlohmann "$root/symbols.txt"; then fail "nlohmann symbols exported: $(grep -c nlohmann "$root/symbols.txt")"; fi
foreign="$(grep -v -E '(^|[ :(<,*&])ember(::|_)|^EMBER_0$' "$root/symbols.txt" || true)"
[ -z "$foreign" ] || fail "symbols outside Ember's API are exported:
$(echo "$foreign" | head -20)"
echo "libember exports $count symbols, all Ember's"

# Cflags: Ember's include folder and nothing else (no MPI, CUDA or nlohmann folders).
cflags="$(pc --cflags | xargs)"
[[ "$cflags" =~ ^-I$root/[^\ ]*/include/ember$ ]] || fail "pkg-config --cflags ember gives '$cflags'"

# The shared-library consumers.
c++ -std=c++20 "$src/embed.cpp" $(pc --cflags --libs) -Wl,-rpath,"$libdir" -o "$root/app"
"$root/app" "$weights" "$root"
cc -std=c11 -Wall -Wextra -pedantic -Werror "$src/../capi/example.c" $(pc --cflags --libs) \
  -Wl,-rpath,"$libdir" -o "$root/app_c"
"$root/app_c" "$weights"

# The static consumer: with only libember.a installed, -lember is the archive and
# Libs.private must name everything it needs.
rm -f "$libdir"/libember.so*
c++ -std=c++20 "$src/embed.cpp" $(pc --static --cflags --libs) -o "$root/app_static"
if readelf -d "$root/app_static" | grep -q 'libember'; then fail "the static consumer still needs libember.so"; fi
"$root/app_static" "$weights" "$root"
# A C program linking the C++ archive: Libs.private must bring the C++ runtime.
cc -std=c11 "$src/../capi/example.c" $(pc --static --cflags --libs) -o "$root/app_c_static"
"$root/app_c_static" "$weights"
echo "static consumer linked with: $(pc --static --libs | xargs)"
