#!/usr/bin/env bash
# check-format.sh - check that every C source and header follows .clang-format.
#
# Usage: tools/check-format.sh [--fix] [FILE...]
#   (no arguments)  check every *.c and *.h under model/ topo/ sim/ traces/ tools/ tests/ (those
#                   directories that exist), list the files that need reformatting, exit 1 if any.
#   --fix           rewrite the files in place instead (clang-format -i).
#   FILE...         check or fix only these files.
# Environment: CLANG_FORMAT names the binary (default clang-format; CI uses Debian's version 14,
# and other versions may format differently).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

fix=0
if [[ ${1:-} == --fix ]]; then
    fix=1
    shift
fi
case ${1:-} in
-h | --help)
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
    ;;
esac

clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
    echo "check-format: $clang_format not found (Debian package clang-format)" >&2
    exit 2
fi

files=()
if (($# > 0)); then
    files=("$@")
else
    dirs=()
    for d in model topo sim traces tools tests; do
        [[ -d $d ]] && dirs+=("$d")
    done
    if ((${#dirs[@]} > 0)); then
        while IFS= read -r -d '' f; do
            files+=("$f")
        done < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
    fi
fi
if ((${#files[@]} == 0)); then
    echo "check-format: no C files to check" >&2
    exit 0
fi

if ((fix)); then
    "$clang_format" -i --style=file "${files[@]}"
    echo "check-format: formatted ${#files[@]} files" >&2
    exit 0
fi

bad=()
for f in "${files[@]}"; do
    if ! "$clang_format" --dry-run --Werror --style=file "$f" >/dev/null 2>&1; then
        bad+=("$f")
    fi
done
version=$("$clang_format" --version | head -n 1)
if ((${#bad[@]} > 0)); then
    echo "check-format: ${#bad[@]} of ${#files[@]} files are not formatted per .clang-format ($version):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "Fix with: tools/check-format.sh --fix ${bad[*]}" >&2
    exit 1
fi
echo "check-format: ${#files[@]} files OK ($version)" >&2
