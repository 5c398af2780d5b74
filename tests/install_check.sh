#!/usr/bin/env bash
# make install into a temporary DESTDIR and PREFIX, then what a team that
# pins stepwise does with it: build a C and a C++ program with nothing but
# pkg-config (tests/lib/installed.c; LD_LIBRARY_PATH to the prefix) and run
# them; link the static archive into the same program, which has its own
# forward, generate, gguf_type_name, quantize_row and matmul;
# the library's soname is versioned and both its exports and the archive's
# are the API's only; the version is build_info.h's everywhere; make
# uninstall leaves nothing behind; a PREFIX and a DESTDIR with spaces and a
# quote get exactly the files, and uninstall takes exactly them away. In
# `make test` (lib-check).
#
#   bash tests/install_check.sh
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
version=$(sed -n 's/^#define STEPWISE_VERSION "\(.*\)"/\1/p' ref/util/build_info.h)
api=$(sed -n 's/^#define STEPWISE_API_VERSION \([0-9]*\).*/\1/p' ref/api/stepwise.h)
abi=$(echo "$version" | cut -d. -f1,2)
prefix=/opt/stepwise-test root="$work/root"
fail() { echo "install check: FAIL $*"; exit 1; }

make --no-print-directory -s install PREFIX="$prefix" DESTDIR="$root" > "$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "make install"; }
lib="$root$prefix/lib"
[ -f "$lib/libstepwise.so.$abi" ] && [ "$(readlink "$lib/libstepwise.so")" = "libstepwise.so.$abi" ] ||
    fail "no libstepwise.so.$abi with its link in $lib"
soname=$(readelf -d "$lib/libstepwise.so.$abi" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libstepwise.so.$abi" ] || fail "the soname is '$soname', not libstepwise.so.$abi"
others=$(nm -D --defined-only "$lib/libstepwise.so.$abi" | awk '{print $3}' | grep -v '^sw_\|^stepwise_version$' || true)
[ -z "$others" ] || fail "the .so exports more than the API: $(echo $others | head -c 200)"
[ "$("$root$prefix/bin/stepwise" --version)" = "stepwise $version" ] || fail "stepwise --version"
grep -q "^version = \"$version\"\$" python/pyproject.toml || fail "python/pyproject.toml's version is not $version"
# the package as installed, with nothing set but the path Debian's python3
# takes it from under the prefix: it finds the installed library itself
site=$(ls -d "$root$prefix"/lib/python3.*/dist-packages) || fail "no Python package installed"
py=$(cd "$work" && PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$site" /usr/bin/python3 -c \
    'import os, stepwise; print(stepwise.__version__, stepwise.version(), os.path.realpath(stepwise._find_library()))')
[ "$py" = "$version stepwise $version (api $api) $lib/libstepwise.so.$abi" ] ||
    fail "the installed Python package says '$py'"

# the .pc names the prefix; a build moved under DESTDIR is found through
# pkg-config's sysroot, as a packager's is
export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
[ "$(pkg-config --modversion stepwise)" = "$version" ] || fail "pkg-config --modversion"
grep -q "^prefix=$prefix\$" "$lib/pkgconfig/stepwise.pc" || fail "stepwise.pc's prefix is not $prefix"
cp tests/lib/installed.c "$work/installed.cpp"
gcc -std=c11 -Wall -Wextra -Werror -o "$work/installed_c" tests/lib/installed.c \
    $(pkg-config --cflags --libs stepwise) || fail "a C program against the installed library"
g++ -std=c++17 -Wall -Wextra -Werror -o "$work/installed_cpp" "$work/installed.cpp" \
    $(pkg-config --cflags --libs stepwise) || fail "a C++ program against the installed library"
for p in installed_c installed_cpp; do
    LD_LIBRARY_PATH="$lib" "$work/$p" "stepwise $version (api $api)" || fail "$p"
    ldd_line=$(LD_LIBRARY_PATH="$lib" ldd "$work/$p" | grep libstepwise) || fail "$p: no libstepwise"
    case "$ldd_line" in *"$lib/libstepwise.so.$abi"*) ;; *) fail "$p loads $ldd_line" ;; esac
done

# the static archive beside an engine's own forward, generate, gguf_type_name,
# quantize_row and matmul: only the API's names are global in it
others=$(nm --defined-only -g "$lib/libstepwise.a" | awk 'NF == 3 {print $3}' | grep -v '^sw_\|^stepwise_version$' || true)
[ -z "$others" ] || fail "libstepwise.a shows more than the API: $(echo $others | head -c 200)"
gcc -std=c11 -Wall -Wextra -Werror -o "$work/installed_static" tests/lib/installed.c \
    $(pkg-config --cflags stepwise) "$lib/libstepwise.a" \
    $(pkg-config --static --libs stepwise | sed 's/ *-lstepwise\b//') ||
    fail "a program with its own forward, generate, gguf_type_name, ... against libstepwise.a"
"$work/installed_static" "stepwise $version (api $api)" || fail "the statically linked program"

make --no-print-directory -s uninstall PREFIX="$prefix" DESTDIR="$root" > /dev/null
left=$(find "$root" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left $left"

# A PREFIX and a DESTDIR with spaces and a quote (issue 67): each is one
# folder. install writes these files there and nothing anywhere else (not
# "apps/..." in the checkout, not /opt/my); uninstall removes exactly them.
odd_root="$work/dest dir" odd_prefix="/opt/my apps/it's"
checkout_before=$(git status --porcelain --untracked-files=all)
opt_before=$(ls -d /opt/my /opt/my* 2> /dev/null || true)
make --no-print-directory -s install PREFIX="$odd_prefix" DESTDIR="$odd_root" > "$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "make install into a prefix with a space"; }
pyver=$(/usr/bin/python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
expected=$( { printf '%s\n' bin/stepwise "lib/libstepwise.so.$abi" lib/libstepwise.so lib/libstepwise.a \
                include/stepwise.h lib/pkgconfig/stepwise.pc
              for f in python/stepwise/*.py; do
                  echo "lib/$pyver/dist-packages/stepwise/${f##*/}"
              done; } | sort)
got=$(cd "$odd_root$odd_prefix" && find . \( -type f -o -type l \) -printf '%P\n' | sort)
[ "$got" = "$expected" ] || fail "install into '$odd_prefix' wrote: $(echo $got | head -c 300)"
outside=$(find "$odd_root" \( -type f -o -type l \) ! -path "$odd_root$odd_prefix/*")
[ -z "$outside" ] || fail "install wrote outside the prefix: $outside"
# pkg-config's escapes (a backslash before a space or a quote): its flags
# name the one folder, and a shell's eval takes them as one word
escaped="/opt/my\\ apps/it\\'s"
grep -qxF "prefix=$escaped" "$odd_root$odd_prefix/lib/pkgconfig/stepwise.pc" ||
    fail "stepwise.pc's prefix is not '$odd_prefix' escaped"
cflags=$(PKG_CONFIG_PATH="$odd_root$odd_prefix/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR= \
    pkg-config --cflags stepwise | sed 's/ *$//')
[ "$cflags" = "-I$escaped/include" ] || fail "pkg-config --cflags with a prefix holding spaces: $cflags"
eval "set -- $cflags"
[ $# = 1 ] && [ "$1" = "-I$odd_prefix/include" ] || fail "the flags are not one folder: $*"
"$odd_root$odd_prefix/bin/stepwise" --version > /dev/null || fail "the stepwise installed under a space"
make --no-print-directory -s uninstall PREFIX="$odd_prefix" DESTDIR="$odd_root" > /dev/null 2>&1 ||
    fail "make uninstall from a prefix with a space"
left=$(find "$odd_root" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left $left"
[ "$(git status --porcelain --untracked-files=all)" = "$checkout_before" ] ||
    fail "install or uninstall changed the checkout: $(git status --porcelain | head -5)"
[ "$(ls -d /opt/my /opt/my* 2> /dev/null || true)" = "$opt_before" ] ||
    fail "install or uninstall touched /opt/my"
echo "install check: PASS (libstepwise.so.$abi, stepwise $version (api $api), C and C++ through pkg-config, a prefix with spaces)"
