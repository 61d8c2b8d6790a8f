#!/usr/bin/env bash
# Formats every C/C++ source in place with clang-format (the files scripts/check-format.sh checks).
set -euo pipefail

cd "$(dirname "$0")/.."
CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"

if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
  echo "format: '$CLANG_FORMAT' not found; apt-get install -y clang-format" >&2
  exit 2
fi

# jni-bridge/ joins native/ once it exists.
roots=()
for d in native jni-bridge; do [[ -d $d ]] && roots+=("$d"); done

find "${roots[@]}" \( -path native/build -o -name target \) -prune -o \
  -type f \( -name '*.h' -o -name '*.cc' -o -name '*.c' \) -print0 |
  xargs -0 -r "$CLANG_FORMAT" -i
