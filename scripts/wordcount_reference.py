#!/usr/bin/env python3
"""Independent word count of a text file, to check the Flink word-count jobs against.

Tokenization (the same rule as io.nearstream.benchmarks.workloads.WordTokenizer, written again
here from the rule, not from the Java code): a word is a maximal run of ASCII letters and digits
[A-Za-z0-9]; every other byte (space, punctuation, apostrophe, any byte of a non-ASCII UTF-8
character) separates words; words are lowercased (ASCII). The text is read as bytes, so no
decoding or locale is involved. Record splitting does not matter: the producer cuts records only
at whitespace, so no word spans two records.

Output: one "word<TAB>count" line per distinct word, sorted by word (byte order), counts multiplied
by --repeat (the producer's corpus repetitions). With --total, only the total number of words.
"""

import argparse
import collections
import re
import sys

WORD = re.compile(rb"[A-Za-z0-9]+")


def count(data: bytes) -> collections.Counter:
    return collections.Counter(m.group().lower() for m in WORD.finditer(data))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("text", help="the text file (e.g. the output of scripts/fetch-corpus.sh)")
    parser.add_argument("--repeat", type=int, default=1, help="corpus repetitions (default 1)")
    parser.add_argument("--out", help="write here instead of stdout")
    parser.add_argument("--total", action="store_true", help="print only the total word count")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")

    with open(args.text, "rb") as f:
        counts = count(f.read())

    out = open(args.out, "w", encoding="ascii") if args.out else sys.stdout
    try:
        if args.total:
            out.write("%d\n" % (sum(counts.values()) * args.repeat))
        else:
            for word in sorted(counts):
                out.write("%s\t%d\n" % (word.decode("ascii"), counts[word] * args.repeat))
    finally:
        if args.out:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
