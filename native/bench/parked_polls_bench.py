#!/usr/bin/env python3
"""Broker CPU per append while long-poll fetches are parked on other streamlets.

A stream has --streamlets streamlets. --parked long-poll fetches (max_wait_ms 60 s, the broker's
cap) wait on streamlets 1.. (never appended to), spread over --poll-connections connections;
then one connection appends small chunks to streamlet 0 for --duration-s seconds, --inflight
appends at a time (default 1: each append waits for its response). Reported per append:
  * broker CPU in microseconds (the broker's own nearstream_process_cpu_ns_total, read through
    the Stats RPC before and after, so this script's CPU is not counted);
  * park attempts (nearstream_fetch_parked_total: a woken poll that finds nothing parks again);
  * wake-ups (nearstream_fetch_wakeups_total, absent from brokers that predate it: "-").
Each configuration runs on a fresh broker. Every binary given with --broker-binary is measured
with --parked polls and with none, the binaries alternating, --repeat times; the table shows
the median of the repeats.

Python standard library only (it speaks the wire protocol of docs/protocol.md itself).
Example (docs/results/parked-polls.md):
  native/bench/parked_polls_bench.py --broker-binary before=/tmp/nearstreamd-before \\
      --broker-binary after=native/build/default/nearstreamd
"""
import argparse
import os
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading

# CRC32C from the repository's independent Python implementation of docs/protocol.md (the
# generator of the golden test vectors), rather than a second copy here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "testdata", "protocol"))
from generate import crc32c  # noqa: E402
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

OP_CREATE_STREAM, OP_APPEND, OP_FETCH, OP_STATS = 2, 7, 8, 9
CPU = "nearstream_process_cpu_ns_total"
PARKED = "nearstream_fetch_parked_total"
WAKEUPS = "nearstream_fetch_wakeups_total"
WAITING = "nearstream_fetch_waiting"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--broker-binary", action="append", default=[],
                   help="LABEL=PATH (or PATH) of a nearstreamd; repeat to compare binaries "
                        "(default: native/build/default/nearstreamd)")
    p.add_argument("--parked", type=int, default=400, help="long polls parked on other streamlets")
    p.add_argument("--poll-connections", type=int, default=40)
    p.add_argument("--streamlets", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--records-per-chunk", type=int, default=10)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--inflight", type=int, default=1, help="appends in flight (one connection)")
    p.add_argument("--duration-s", type=float, default=3.0, help="append phase per measurement")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=None, help="write the Markdown table to this file")
    return p.parse_args()


# ---- wire protocol -----------------------------------------------------------------------------

def make_chunk(records, producer=0, sequence=0, timestamp_ms=1000):
    payload = b"".join(struct.pack("<I", len(r)) + r for r in records)
    head = struct.pack("<IBBHII QQqI", 0x4B43534E, 1, 0, 48, len(payload), crc32c(payload),
                       producer, sequence, timestamp_ms, len(records))
    return head + struct.pack("<I", crc32c(head)) + payload


def s_str(text):
    b = text.encode()
    return struct.pack("<H", len(b)) + b


def frame(opcode, request_id, body):
    return struct.pack("<IBBHQ", 12 + len(body), 1, 0, opcode, request_id) + body


class Conn:
    def __init__(self, address):
        self.sock = socket.create_connection(address)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 1

    def send(self, opcode, body):
        rid = self.next_id
        self.next_id += 1
        self.sock.sendall(frame(opcode, rid, body))
        return rid

    def parse(self):
        """Returns (request id, status, body) of a complete buffered response, or None."""
        if len(self.buf) < 4:
            return None
        n = struct.unpack_from("<I", self.buf)[0]
        if len(self.buf) < 4 + n:
            return None
        f, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
        rid, status, mlen = struct.unpack_from("<QHH", f, 4)
        return rid, status, f[16 + mlen:]

    def receive(self):
        while True:
            r = self.parse()
            if r is not None:
                return r
            data = self.sock.recv(1 << 16)
            if not data:
                raise RuntimeError("broker closed the connection")
            self.buf += data

    def call(self, opcode, body):
        self.send(opcode, body)
        rid, status, resp = self.receive()
        if status != 0:
            raise RuntimeError(f"opcode {opcode}: status {status}")
        return resp

    def close(self):
        self.sock.close()


def create_stream(c, name, streamlets):
    # name, streamlets, segment_bytes, P, Q (0 = broker defaults), durability none,
    # retention 64 MiB per streamlet (bounds memory), no age limit.
    c.call(OP_CREATE_STREAM, s_str(name) + struct.pack("<IIIIBqq", streamlets, 0, 0, 0, 0,
                                                       64 << 20, -1))


def fetch_body(stream, streamlet, max_wait_ms):
    return (s_str(stream) + struct.pack("<II", max_wait_ms, 1) +
            struct.pack("<I", streamlet) + b"\0" * 20 + struct.pack("<I", 1 << 20))


def append_body(stream, streamlet, chunk):
    return s_str(stream) + struct.pack("<II", 1, streamlet) + struct.pack("<I", len(chunk)) + chunk


def stats(c):
    body = c.call(OP_STATS, b"")
    (count,), at, out = struct.unpack_from("<I", body), 4, {}
    for _ in range(count):
        (n,) = struct.unpack_from("<H", body, at)
        name = body[at + 2:at + 2 + n].decode()
        (out[name],) = struct.unpack_from("<Q", body, at + 2 + n)
        at += 10 + n
    return out


# ---- broker and load ---------------------------------------------------------------------------

class Broker:
    def __init__(self, binary, workers):
        self.tmp = tempfile.mkdtemp(prefix="ns-parked-")
        port_file = os.path.join(self.tmp, "port")
        self.log = open(os.path.join(self.tmp, "broker.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--port-file", port_file, "--workers", str(workers)],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(500):
            if os.path.exists(port_file) and open(port_file).read().strip():
                self.address = ("127.0.0.1", int(open(port_file).read().strip()))
                return
            time.sleep(0.01)
        raise RuntimeError(binary + " did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


class Pollers:
    """Keeps `count` long polls parked on streamlets 1.. over `conns` connections: any answer
    (a deadline passing) is followed by a new poll."""

    def __init__(self, address, stream, count, conns, streamlets):
        self.stream = stream
        self.conns = [Conn(address) for _ in range(max(1, min(conns, count)) if count else 0)]
        self.sel = selectors.DefaultSelector()
        self.answered = 0
        self.stop_flag = False
        for i in range(count):
            c = self.conns[i % len(self.conns)]
            streamlet = 1 + i % (streamlets - 1)
            c.send(OP_FETCH, fetch_body(stream, streamlet, 60000))
        for c in self.conns:
            c.sock.setblocking(False)
            self.sel.register(c.sock, selectors.EVENT_READ, c)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag and self.conns:
            for key, _ in self.sel.select(timeout=0.1):
                c = key.data
                try:
                    data = c.sock.recv(1 << 16)
                except BlockingIOError:
                    continue
                if not data:
                    return
                c.buf += data
                while (r := c.parse()) is not None:
                    self.answered += 1
                    body = r[2]
                    # Poll the answered entry's streamlet again (result: streamlet u32 first).
                    streamlet = struct.unpack_from("<I", body, 4)[0] if len(body) >= 8 else 1
                    c.sock.setblocking(True)
                    c.send(OP_FETCH, fetch_body(self.stream, streamlet, 60000))
                    c.sock.setblocking(False)

    def close(self):
        self.stop_flag = True
        self.thread.join()
        for c in self.conns:
            c.close()


def measure(binary, args, parked):
    b = Broker(binary, args.workers)
    try:
        admin = Conn(b.address)
        create_stream(admin, "p", args.streamlets)
        pollers = Pollers(b.address, "p", parked, args.poll_connections, args.streamlets)
        deadline = time.time() + 10
        while stats(admin)[WAITING] < parked:
            if time.time() > deadline:
                raise RuntimeError("the polls did not park")
            time.sleep(0.01)
        chunk = make_chunk([bytes([97 + i % 26]) * args.record_size
                            for i in range(args.records_per_chunk)])
        body = append_body("p", 0, chunk)
        appender = Conn(b.address)
        s0 = stats(admin)
        appends = 0
        for _ in range(args.inflight):
            appender.send(OP_APPEND, body)
        end = time.time() + args.duration_s
        in_flight = args.inflight
        while in_flight:
            _, status, resp = appender.receive()
            if status != 0 or struct.unpack_from("<IIH", resp)[2] != 0:
                raise RuntimeError("append failed")
            appends += 1
            if time.time() < end:
                appender.send(OP_APPEND, body)
            else:
                in_flight -= 1
        time.sleep(0.2)  # let woken polls settle (re-park) before the counters are read
        s1 = stats(admin)
        waiting = s1[WAITING]
        pollers.close()
        appender.close()
        admin.close()

        def per_append(name):
            return (s1[name] - s0[name]) / appends if name in s1 else None

        return {
            "appends": appends,
            "cpu_us": per_append(CPU) / 1000,
            "parks": per_append(PARKED),
            "wakeups": per_append(WAKEUPS),
            "waiting": waiting,
            "answered": pollers.answered,
        }
    finally:
        b.stop()


def fmt(x, digits):
    return "-" if x is None else f"{x:.{digits}f}"


def main():
    args = parse_args()
    binaries = []
    for spec in args.broker_binary or [os.path.join(ROOT, "build", "default", "nearstreamd")]:
        label, _, path = spec.rpartition("=")
        binaries.append((label or os.path.basename(path), path))
    configs = [(label, path, parked) for label, path in binaries for parked in (0, args.parked)]
    runs = {(label, parked): [] for label, _, parked in configs}
    for rep in range(args.repeat):
        for label, path, parked in configs:  # the binaries alternate within every repeat
            r = measure(path, args, parked)
            runs[(label, parked)].append(r)
            print(f"repeat {rep + 1} {label:>8} parked={parked:<4} appends={r['appends']:<6} "
                  f"cpu_us/append={r['cpu_us']:.2f} parks/append={r['parks']:.2f} "
                  f"wakeups/append={fmt(r['wakeups'], 2)} waiting_after={r['waiting']} "
                  f"polls_answered={r['answered']}", flush=True)

    def med(rs, key):
        vals = [r[key] for r in rs if r[key] is not None]
        return statistics.median(vals) if vals else None

    lines = ["| broker | parked polls | appends (median) | broker CPU µs / append (median) | "
             "CPU µs / append, all repeats | park attempts / append | wake-ups / append |",
             "|---|---|---|---|---|---|---|"]
    for label, _, parked in configs:
        rs = runs[(label, parked)]
        lines.append(f"| {label} | {parked} | {int(med(rs, 'appends'))} | {med(rs, 'cpu_us'):.2f} | "
                     + ", ".join(f"{r['cpu_us']:.2f}" for r in rs)
                     + f" | {fmt(med(rs, 'parks'), 2)} | {fmt(med(rs, 'wakeups'), 2)} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
