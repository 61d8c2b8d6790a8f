#!/usr/bin/env python3
"""Broker throughput and CPU cost, measured side by side in one run.

For each chunk size it starts a fresh nearstreamd and runs nearstream-perf three times:
  1. produce + consume concurrently  -> aggregate append and fetch throughput (median rec/s);
  2. produce only                    -> broker CPU seconds per million records appended;
  3. consume only (what 2 appended)  -> broker CPU seconds per million records fetched.
Broker CPU comes from the broker's own counter nearstream_process_cpu_ns_total (Stats RPC),
read before and after each phase, so the load generator's CPU is not counted.

Writes a CSV and a Markdown table. Example (the figures in docs/results/broker.md):
  native/bench/broker_bench.py --out docs/results
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "default"), help="dir with the binaries")
    p.add_argument("--chunk-sizes", default="16K,64K,128K")
    p.add_argument("--producers", type=int, default=2)
    p.add_argument("--consumers", type=int, default=1)
    p.add_argument("--streamlets", type=int, default=4)
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--inflight", type=int, default=4)
    p.add_argument("--duration-s", type=int, default=8)
    p.add_argument("--fetch-factor", type=int, default=32,
                   help="consumer max bytes per streamlet = factor x chunk size (KerA "
                        "(Marcu et al., ICDCS 2018) sizes consumer requests 16x the producer "
                        "batch)")
    p.add_argument("--retention-bytes", default="768M", help="per streamlet, bounds broker memory")
    p.add_argument("--cost-duration-s", type=int, default=3,
                   help="produce-only phase; everything it appends stays in broker memory")
    p.add_argument("--out", default=None, help="directory for broker-bench.csv and broker-bench.md")
    return p.parse_args()


class Broker:
    def __init__(self, build, workers):
        self.tmp = tempfile.mkdtemp(prefix="ns-bench-")
        port_file = os.path.join(self.tmp, "port")
        self.log = open(os.path.join(self.tmp, "broker.log"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(build, "nearstreamd"), "--listen", "127.0.0.1:0", "--port-file", port_file,
             "--workers", str(workers)], stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(500):
            if os.path.exists(port_file):
                self.address = "127.0.0.1:" + open(port_file).read().strip()
                return
            time.sleep(0.01)
        raise RuntimeError("nearstreamd did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


def cli(build, address, *args):
    out = subprocess.run([os.path.join(build, "nearstream"), "--broker", address, *args],
                         check=True, capture_output=True, text=True)
    return out.stdout


def stats(build, address):
    values = {}
    for line in cli(build, address, "stats").splitlines():
        parts = line.rsplit(" ", 1)
        if len(parts) == 2 and parts[1].isdigit():
            values[parts[0]] = int(parts[1])
    return values


def perf(build, address, stream, args, extra):
    cmd = [os.path.join(build, "nearstream-perf"), "--broker", address, "--stream", stream,
           "--streamlets", str(args.streamlets), "--record-size", str(args.record_size)] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"^RESULT (.*)$", out, re.M)
    if not m:
        raise RuntimeError("no RESULT line from nearstream-perf:\n" + out)
    return {k: float(v) if re.match(r"^[0-9.]+$", v) else v
            for k, v in (kv.split("=") for kv in m.group(1).split())}


def size_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def measure(args, cs):
    b = Broker(args.build, args.workers)
    try:
        def create(name):
            cli(args.build, b.address, "create", name, "--streamlets", str(args.streamlets),
                "--retention-bytes", args.retention_bytes)

        common = ["--chunk-size", cs, "--inflight", str(args.inflight), "--all-streamlets",
                  "--fetch-bytes", str(args.fetch_factor * size_bytes(cs))]
        create("both")
        both = perf(args.build, b.address, "both", args,
                    common + ["--producers", str(args.producers), "--consumers", str(args.consumers),
                              "--duration-s", str(args.duration_s)])
        cli(args.build, b.address, "delete", "both")

        # No retention here: the consume phase must find everything that was appended.
        cli(args.build, b.address, "create", "cost", "--streamlets", str(args.streamlets))
        s0 = stats(args.build, b.address)
        perf(args.build, b.address, "cost", args,
             common + ["--producers", str(args.producers), "--consumers", "0",
                       "--duration-s", str(args.cost_duration_s)])
        s1 = stats(args.build, b.address)
        appended = s1["nearstream_append_records_total"] - s0["nearstream_append_records_total"]
        perf(args.build, b.address, "cost", args,
             ["--producers", "0", "--consumers", str(args.consumers), "--records", str(appended),
              "--duration-s", "120", "--fetch-bytes", str(args.fetch_factor * size_bytes(cs))])
        s2 = stats(args.build, b.address)
        fetched = s2["nearstream_fetch_records_total"] - s1["nearstream_fetch_records_total"]
        cpu = "nearstream_process_cpu_ns_total"
        return {
            "chunk_size": cs,
            "producer_rps": int(both["producer_rps"]),
            "consumer_rps": int(both["consumer_rps"]),
            "producer_mbps": both["producer_mbps"],
            "consumer_mbps": both["consumer_mbps"],
            "append_cpu_s_per_M": round((s1[cpu] - s0[cpu]) / 1e9 / (appended / 1e6), 4),
            "fetch_cpu_s_per_M": round((s2[cpu] - s1[cpu]) / 1e9 / (fetched / 1e6), 4),
            "appended": appended,
            "fetched": fetched,
        }
    finally:
        b.stop()


def main():
    args = parse_args()
    rows = [measure(args, cs) for cs in args.chunk_sizes.split(",")]
    cols = list(rows[0].keys())
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "broker-bench.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
        with open(os.path.join(args.out, "broker-bench.md"), "w") as f:
            f.write("Command: `" + " ".join([os.path.relpath(sys.argv[0], os.getcwd())] + sys.argv[1:]) + "`\n\n")
            f.write(f"Np={args.producers} producers, Nc={args.consumers} consumer, Ns={args.streamlets} "
                    f"streamlets, {args.record_size} B records, --workers {args.workers}, "
                    f"{args.inflight} appends in flight per producer, consumer fetch of "
                    f"{args.fetch_factor} x CS per streamlet, durability none.\n\n")
            f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
            for r in rows:
                f.write("| " + " | ".join(str(r[c]) for c in cols) + " |\n")


if __name__ == "__main__":
    main()
