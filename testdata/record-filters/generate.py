#!/usr/bin/env python3
"""Writes cases.tsv: records and whether each passes a record filter (docs/protocol.md, "Record
filters"), decided by an implementation independent of the broker's (C++) and the client's
(Java): Python's own `json` module, told to refuse what RFC 8259 refuses (NaN, Infinity) and to
pass a record when any of a repeated name's values does. The broker's and the client's tests read every line and must
agree with it, so the push thread and a Flink job filtering fetched records keep the same records.

Usage: python3 testdata/record-filters/generate.py [output.tsv]   (seeded: the output is stable)

Line format (tab-separated; lines starting with '#' are comments):
  expect   "pass" or "fail"
  filter   json_field_in:<field hex>:<value hex>,<value hex>,...   (one empty value: nothing after
           the second colon)  |  bytes_contain:<needle hex>
  record   the record's bytes, hex (may be empty)
  note     free text for people; parsers ignore it
"""

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class _Object(list):
    """A decoded JSON object as its (name, value) pairs, repeated names included (so a top-level
    object is told from other values)."""


def _pairs(pairs):
    return _Object(pairs)


def _reject_constant(name):
    raise ValueError("not JSON: " + name)


def _has_surrogate(s):
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in s)


def json_field_in(field, values, record):
    text = record.decode("utf-8")  # the generated records are all UTF-8 (see HAND for others)
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return False
    if not isinstance(doc, _Object):
        return False
    # Any member of that name may pass the record. A decoded unpaired surrogate escape equals no
    # value (values are well-formed UTF-8).
    return any(name == field and isinstance(value, str) and not _has_surrogate(value)
               and value in values for name, value in doc)


def bytes_contain(needle, record):
    return needle in record


def spec_json(field, values):
    return "json_field_in:%s:%s" % (field.encode().hex(), ",".join(v.encode().hex() for v in values))


def spec_bytes(needle):
    return "bytes_contain:%s" % needle.hex()


JSON_FILTERS = [
    ("event_type", ["view"]),
    ("event_type", ["view", "click", ""]),
    ("typ\u00e9", ["a\"b", "\u00fc", "\U0001F600", "x\\y"]),
]

# Pieces for strings that, decoded, may equal a filter's field or values.
STRING_FORMS = {
    "event_type": ["event_type", "\\u0065vent_type", "event\\u005ftype", "event_typ", "Event_type",
                   "event_type ", "event_type\\u0000"],
    "typ\u00e9": ["typ\u00e9", "typ\\u00e9", "typ\\u00E9", "type", "typ\u00e9\u00e9"],
    "view": ["view", "vi\\u0065w", "\\u0076iew", "View", "views", "vie", "view\\n", "\\/view"],
    "click": ["click", "cl\\u0069ck", "clack"],
    "": [""],
    "a\"b": ["a\\\"b", "a\\u0022b", "ab"],
    "\u00fc": ["\u00fc", "\\u00fc", "\\u00FC", "u\u0308"],
    "\U0001F600": ["\U0001F600", "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\ud83d", "\\ude00\\ud83d"],
    "x\\y": ["x\\\\y", "x\\u005cy", "x\\y"],
    "other": ["purchase", "plain", "tab\\there", "slash\\/", "\\b\\f\\r", "\u00e9t\u00e9",
              "\u007f"],
    "bad": ["raw\ttab", "raw\u0001ctl", "bad\\escape", "bad\\u12", "\\ud800"],
}


def rand_ws(rng):
    if rng.random() < 0.01:
        return " \f"  # not JSON whitespace
    return rng.choice(["", "", "", "", " ", "\n", "\t", "\r\n  "])  # \f is not JSON whitespace


def rand_number(rng):
    if rng.random() < 0.8:
        return rng.choice(["0", "-0", "12", "-3.25", "1e5", "2E-3", "1.5e+10", "123456789012345678901"])
    return rng.choice(["01", "1.", ".5", "-", "+1", "NaN", "Infinity", "-Infinity", "0x10", "1e"])


def rand_string(rng, key=None):
    if key is None:
        key = "bad" if rng.random() < 0.05 else rng.choice(list(STRING_FORMS))
    pool = STRING_FORMS[key]
    return '"' + rng.choice(pool) + '"'


def rand_value(rng, depth):
    r = rng.random()
    if r < 0.35:
        return rand_string(rng)
    if r < 0.5:
        return rand_number(rng)
    if r < 0.6:
        return rng.choice(["true", "false", "null", "true", "false", "null", "tru", "True"])
    if depth < 3 and r < 0.8:
        return rand_object(rng, depth + 1, target=None)
    if depth < 3:
        items = [rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return "[" + rand_ws(rng) + ("," + rand_ws(rng)).join(items) + rand_ws(rng) + "]"
    return rand_string(rng)


def rand_object(rng, depth, target):
    """An object; at depth 1 it usually has the target field, with a value that may match."""
    members = []
    for _ in range(rng.randint(0, 3)):
        members.append((rand_string(rng), rand_value(rng, depth)))
    if target is not None and rng.random() < 0.85:
        field, values = target
        value_key = rng.choice(values + ["other"])
        if rng.random() < 0.15:
            value = rand_value(rng, depth)  # not a string, or a nested one holding the field
        else:
            value = rand_string(rng, value_key)
        at = rng.randint(0, len(members))
        members.insert(at, (rand_string(rng, field), value))
        if rng.random() < 0.2:  # a repeated name: any of its values may pass the record
            members.insert(rng.randint(0, len(members)),
                           (rand_string(rng, field), rand_string(rng, rng.choice(values))))
    body = ("," + rand_ws(rng)).join(k + rand_ws(rng) + ":" + rand_ws(rng) + v for k, v in members)
    if members and rng.random() < 0.05:
        body += ","  # a trailing comma
    return "{" + rand_ws(rng) + body + rand_ws(rng) + "}"


MUTATION_CHARS = list('{}[],:"\\ 0-1eE.+tfnu') + ["\u00e9", "\t"]


def mutate(rng, text):
    i = rng.randrange(len(text) + 1)
    r = rng.random()
    if r < 0.4 and text:
        return text[:i] + text[i + 1:]
    if r < 0.8:
        return text[:i] + rng.choice(MUTATION_CHARS) + text[i:]
    return text[:i]


def json_records(rng, target, n):
    out = []
    for _ in range(n):
        doc = rand_object(rng, 1, target)
        if rng.random() < 0.1:
            doc = rand_ws(rng) + doc + rand_ws(rng)
        out.append(doc)
        if rng.random() < 0.35:
            out.append(mutate(rng, doc))
    out += ['["view"]', '"view"', "", " ", "{}", "{} {}", "{}x", "null",
            '{"event_type":"view"} ', ' {"event_type":"view"}', '{"event_type":"view"}}',
            '\ufeff{"event_type":"view"}', '{"event_type":["view"]}', '{"a":{"event_type":"view"}}']
    return out


def deep(levels, inner):
    """A record whose member "d" nests arrays so the deepest value sits at nesting depth `levels`
    (the top-level object is depth 1)."""
    return ('{"event_type":"view","d":' + "[" * (levels - 1) + inner + "]" * (levels - 1) +
            "}").encode()


# Records Python's json cannot judge the way docs/protocol.md does (bytes that are not UTF-8,
# nesting near the limit), with the expectation written by hand from that page.
HAND = [
    ("pass", ("event_type", ["view"]), b'{"x":"\xff\xfe","event_type":"view"}',
     "bytes above 0x7F in another string are not checked"),
    ("fail", ("event_type", ["view"]), b'{"event_type":"vi\xffw"}',
     "the value's bytes differ"),
    ("pass", ("event_type", ["vi\u00e9w"]), b'{"event_type":"vi\xc3\xa9w"}', "UTF-8 value"),
    ("pass", ("event_type", ["view"]), deep(1000, "1"), "nesting depth exactly 1000"),
    ("fail", ("event_type", ["view"]), deep(1001, "1"), "nesting depth 1001"),
]


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "cases.tsv")
    rng = random.Random(20261126)
    lines = ["# generated by generate.py: expect, filter, record (hex), note"]
    for field, values in JSON_FILTERS:
        for text in json_records(rng, (field, values), 450):
            record = text.encode("utf-8")
            ok = json_field_in(field, values, record)
            note = text.encode("unicode_escape").decode("ascii")[:120]
            lines.append("\t".join(["pass" if ok else "fail", spec_json(field, values),
                                    record.hex(), note]))
    for expect, (field, values), record, note in HAND:
        lines.append("\t".join([expect, spec_json(field, values), record.hex(), "hand: " + note]))
    for needle in [b"view", b"\x00\xff", b"aa"]:
        for _ in range(150):
            parts = [bytes(rng.choice(b"aviewx\x00\xff") for _ in range(rng.randint(0, 6)))
                     for _ in range(3)]
            if rng.random() < 0.3:
                parts.insert(1, needle)
            record = b"".join(parts)
            lines.append("\t".join(["pass" if bytes_contain(needle, record) else "fail",
                                    spec_bytes(needle), record.hex(), "bytes"]))
    with open(out_path, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")
    passed = sum(1 for l in lines if l.startswith("pass"))
    print("wrote %d cases (%d pass) to %s" % (len(lines) - 1, passed, out_path))


if __name__ == "__main__":
    main()
