#!/usr/bin/env bash
# Runs clang-tidy, configured by the root .clang-tidy, over every C++ translation unit of
# native/src (tests included) and native/tools, using the compile_commands.json of the default
# CMake preset (configured here; nothing is built). Exits non-zero on any warning: .clang-tidy
# makes every warning an error.
#
# Environment: CLANG_TIDY (default clang-tidy), RUN_CLANG_TIDY (default run-clang-tidy),
# CLANG_TIDY_JOBS (parallel clang-tidy processes, default: the number of CPUs).
# Takes about 2.5 minutes with 2 jobs on a 2-core machine.
set -euo pipefail

cd "$(dirname "$0")/.."
CLANG_TIDY="${CLANG_TIDY:-clang-tidy}"
RUN_CLANG_TIDY="${RUN_CLANG_TIDY:-run-clang-tidy}"
JOBS="${CLANG_TIDY_JOBS:-$(nproc)}"

for tool in "$CLANG_TIDY" "$RUN_CLANG_TIDY"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "clang-tidy.sh: '$tool' not found." >&2
    echo "  Install it (Debian/Ubuntu: apt-get install -y clang-tidy, which brings both" >&2
    echo "  clang-tidy and run-clang-tidy), or point CLANG_TIDY / RUN_CLANG_TIDY at them." >&2
    exit 2
  fi
done

# The default preset's build tree, with the compile commands clang-tidy reads.
(cd native && cmake --preset default -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null)
build_dir="$PWD/native/build/default"
if [[ ! -f $build_dir/compile_commands.json ]]; then
  echo "clang-tidy.sh: $build_dir/compile_commands.json was not written" >&2
  exit 2
fi

echo "clang-tidy.sh: $("$CLANG_TIDY" --version | grep -m1 -o 'version [0-9.]*'), $JOBS jobs"
start=$(date +%s)
rc=0
# -quiet drops the per-file banner and the "N warnings generated" noise; findings still print.
"$RUN_CLANG_TIDY" -quiet -clang-tidy-binary "$(command -v "$CLANG_TIDY")" -p "$build_dir" \
  -j "$JOBS" "$PWD/native/(src|tools)/" || rc=$?
echo "clang-tidy.sh: $(($(date +%s) - start))s, $([[ $rc == 0 ]] && echo clean || echo "FAILED")"
exit "$rc"
