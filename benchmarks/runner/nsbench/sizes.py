"""Sizes on the command line: 16K, 1M, 2G."""


def parse_size(text):
    text = str(text).strip().upper()
    for suffix, factor in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(float(text[:-1]) * factor)
    return int(text)


def size_list(text):
    return [parse_size(t) for t in str(text).split(",") if t]


def int_list(text):
    return [int(t) for t in str(text).split(",") if t]


def kib(n):
    return f"{n >> 10}K" if n % 1024 == 0 else str(n)
