#!/usr/bin/env bash
# Checks that every C/C++ source of the project is formatted as the root .clang-format says
# (Google style, 100 columns). Exits 1 and names the files that are off; scripts/format.sh fixes them.
set -euo pipefail

cd "$(dirname "$0")/.."
CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"

if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
  echo "check-format: '$CLANG_FORMAT' not found." >&2
  echo "  Install it (Debian/Ubuntu: apt-get install -y clang-format)," >&2
  echo "  or point CLANG_FORMAT at a clang-format binary." >&2
  exit 2
fi

# jni-bridge/ joins native/ once it exists.
roots=()
for d in native jni-bridge; do [[ -d $d ]] && roots+=("$d"); done

# Build trees hold generated files that are not ours to format.
mapfile -d '' files < <(
  find "${roots[@]}" \( -path native/build -o -name target \) -prune -o \
    -type f \( -name '*.h' -o -name '*.cc' -o -name '*.c' \) -print0 | sort -z)

if ((${#files[@]} == 0)); then
  echo "check-format: no C/C++ files found" >&2
  exit 2
fi

off=()
for f in "${files[@]}"; do
  "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1 || off+=("$f")
done

if ((${#off[@]} > 0)); then
  echo "check-format: ${#off[@]} of ${#files[@]} files are not clang-formatted:" >&2
  for f in "${off[@]}"; do
    echo "  $f" >&2
    # The first few spots, so the reason is visible in a CI log.
    "$CLANG_FORMAT" --dry-run --ferror-limit=2 "$f" 2>&1 | sed 's/^/      /' >&2 || true
  done
  echo "Fix: run scripts/format.sh (clang-format -i on every file above), then review the diff." >&2
  exit 1
fi
echo "check-format: ${#files[@]} files OK ($("$CLANG_FORMAT" --version | sed 's/.*version //'))"
