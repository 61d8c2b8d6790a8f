"""Sizes on the command line: 16K, 1M, 2G; CPU lists: 0, 1-3."""
import os


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


def cpu_list(text):
    """CPU numbers as taskset writes them: '0', '1-3', '0,2-3'; empty: None (no pinning)."""
    cpus = []
    for part in str(text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        if first < 0 or last < first:
            raise ValueError(f"bad CPU range '{part}' in '{text}'")
        cpus.extend(range(first, last + 1))
    if not cpus:
        return None
    available = os.sched_getaffinity(0)
    missing = sorted(set(cpus) - available)
    if missing:
        raise ValueError(f"CPUs {missing} of '{text}' are not available here ({sorted(available)})")
    return sorted(set(cpus))
