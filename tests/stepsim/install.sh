#!/bin/sh
# install.sh CMAKE BUILD_DIR - `cmake --install BUILD_DIR --prefix TMP` installs the binary
# (bin/stepsim), the manual page generated from the option table (share/man/man1/stepsim.1) and the
# guides (share/doc/stepsim); the page is the binary's `stepsim --man` and names every option that
# some command's --help lists.
set -eu
cmake_bin=$1
build=$2
prefix=$(mktemp -d "${TMPDIR:-/tmp}/stepsim_install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
"$cmake_bin" --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "install.sh: $*" >&2; exit 1; }
bin=$prefix/bin/stepsim
man=$prefix/share/man/man1/stepsim.1
doc=$prefix/share/doc/stepsim
[ -x "$bin" ] || fail "bin/stepsim missing"
"$bin" --version | grep -q '^stepsim ' || fail "bin/stepsim --version"
[ -s "$man" ] || fail "share/man/man1/stepsim.1 missing"
head -1 "$man" | grep -q '^\.TH STEPSIM 1' || fail "stepsim.1 has no .TH line"
"$bin" --man | cmp -s - "$man" || fail "stepsim.1 is not the binary's stepsim --man"
[ -s "$doc/README.md" ] || fail "share/doc/stepsim/README.md missing"
[ -s "$doc/cli.md" ] || fail "share/doc/stepsim/cli.md missing"
[ -s "$doc/run.md" ] || fail "share/doc/stepsim/run.md missing"
page=$(sed 's/\\-/-/g' "$man")
n=0
for cmd in estimate search topo collective run compare validate sweep; do
    for opt in $("$bin" "$cmd" --help | sed -n 's/^  \(--[a-z0-9-]*\).*/\1/p'); do
        printf '%s\n' "$page" | grep -Eq -- "^\.BI? \"?$opt( |\"|\$)" || fail "stepsim.1 lacks $opt ($cmd)"
        n=$((n + 1))
    done
done
[ "$n" -gt 100 ] || fail "only $n options checked"
# it renders without warnings where man(1) is installed
if command -v man >/dev/null 2>&1; then
    warn=$(MANWIDTH=80 man --warnings -l "$man" 2>&1 >/dev/null || true)
    [ -z "$warn" ] || fail "man -l: $warn"
fi
echo "install.sh: bin/stepsim, share/man/man1/stepsim.1 ($n option entries checked), share/doc/stepsim"
