#!/usr/bin/env python3
"""Parallel appends to one streamlet: two brokers side by side, Q = 1 vs Q = 2 (issue: KerA's
parallel appends).

Two producers (nearstream-perf, one connection and one producer id each; the ids are
consecutive, so with Q = 2 they map to different active groups) append to ONE streamlet. Each
configuration (durability x Q x broker binary) runs on a fresh nearstreamd with its own data
directory; the binaries alternate within every round, so the old and the new broker see the
same machine conditions. Per run: the producers' median records/s (nearstream-perf's RESULT
line) and the broker's CPU seconds per million records appended, from the broker's own counter
nearstream_process_cpu_ns_total (Stats RPC, read before and after the run, as broker_bench.py
does), so the load generator's CPU is not counted.

Example (the figures in docs/results/parallel-appends.md):
  native/bench/parallel_appends_bench.py --old /tmp/nearstreamd-serial \\
      --new native/build/default/nearstreamd --out docs/results
"""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "default"),
                   help="dir with nearstream and nearstream-perf")
    p.add_argument("--old", required=True, help="the old broker binary (one lock per streamlet)")
    p.add_argument("--new", required=True, help="the new broker binary (a lock per active group)")
    p.add_argument("--durabilities", default="none,sync")
    p.add_argument("--active-groups", default="1,2")
    p.add_argument("--rounds", type=int, default=2, help="runs of every configuration")
    p.add_argument("--duration-s", type=int, default=10)
    p.add_argument("--producers", type=int, default=2)
    p.add_argument("--chunk-size", default="16K")
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--inflight", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--retention-bytes", default="256M", help="bounds broker memory")
    p.add_argument("--data-root", default=None,
                   help="where the brokers' data directories go (default: the temp dir)")
    p.add_argument("--out", default=None,
                   help="directory for parallel-appends.csv and parallel-appends-table.md")
    return p.parse_args()


class Broker:
    def __init__(self, binary, workers, data_root):
        self.tmp = tempfile.mkdtemp(prefix="ns-pa-bench-", dir=data_root)
        port_file = os.path.join(self.tmp, "port")
        self.log = open(os.path.join(self.tmp, "broker.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--port-file", port_file,
             "--data-dir", os.path.join(self.tmp, "data"), "--workers", str(workers)],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(500):
            if os.path.exists(port_file) and open(port_file).read().strip():
                self.address = "127.0.0.1:" + open(port_file).read().strip()
                return
            time.sleep(0.01)
        self.stop()
        raise RuntimeError("nearstreamd did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def stats(build, address):
    out = subprocess.run([os.path.join(build, "nearstream"), "--broker", address, "stats"],
                         check=True, capture_output=True, text=True).stdout
    values = {}
    for line in out.splitlines():
        parts = line.rsplit(" ", 1)
        if len(parts) == 2 and parts[1].isdigit():
            values[parts[0]] = int(parts[1])
    return values


def run_one(args, binary, durability, q):
    b = Broker(binary, args.workers, args.data_root)
    try:
        perf = os.path.join(args.build, "nearstream-perf")
        base = [perf, "--broker", b.address, "--stream", "pa", "--streamlets", "1"]
        s0 = stats(args.build, b.address)
        # --create makes the stream before the measured seconds start.
        out = subprocess.run(base + ["--create", "--durability", durability,
                                     "--active-groups", str(q),
                                     "--retention-bytes", args.retention_bytes,
                                     "--producers", str(args.producers),
                                     "--chunk-size", args.chunk_size,
                                     "--record-size", str(args.record_size),
                                     "--inflight", str(args.inflight),
                                     "--duration-s", str(args.duration_s)],
                             check=True, capture_output=True, text=True).stdout
        s1 = stats(args.build, b.address)
        m = re.search(r"^RESULT (.*)$", out, re.M)
        if not m:
            raise RuntimeError("no RESULT line from nearstream-perf:\n" + out)
        result = dict(kv.split("=") for kv in m.group(1).split())
        appended = s1["nearstream_append_records_total"] - s0["nearstream_append_records_total"]
        cpu_ns = s1["nearstream_process_cpu_ns_total"] - s0["nearstream_process_cpu_ns_total"]
        return {
            "rps": float(result["producer_rps"]),
            "mbps": float(result["producer_mbps"]),
            "appended": appended,
            "cpu_s": cpu_ns / 1e9,
            "cpu_s_per_M": cpu_ns / 1e9 / (appended / 1e6) if appended else float("nan"),
        }
    finally:
        b.stop()


def main():
    args = parse_args()
    brokers = [("old", os.path.abspath(args.old)), ("new", os.path.abspath(args.new))]
    durabilities = args.durabilities.split(",")
    qs = [int(q) for q in args.active_groups.split(",")]
    runs = []
    for r in range(args.rounds):
        for d in durabilities:
            for q in qs:
                for name, binary in brokers:
                    res = run_one(args, binary, d, q)
                    res.update({"round": r + 1, "broker": name, "durability": d, "q": q})
                    print(f"round {r + 1} {name:3} durability={d:4} Q={q}: "
                          f"{res['rps']:.0f} rec/s, {res['cpu_s_per_M']:.3f} broker CPU s/M rec "
                          f"({res['appended']} appended, {res['cpu_s']:.2f} CPU s)", flush=True)
                    runs.append(res)

    rows = []
    for d in durabilities:
        for name, _ in brokers:
            for q in qs:
                mine = [x for x in runs if x["durability"] == d and x["broker"] == name
                        and x["q"] == q]
                rows.append({
                    "durability": d, "broker": name, "q": q,
                    "rec_per_s_median": round(statistics.median(x["rps"] for x in mine)),
                    "rec_per_s_runs": " / ".join(str(round(x["rps"])) for x in mine),
                    "broker_cpu_s_per_M_median":
                        round(statistics.median(x["cpu_s_per_M"] for x in mine), 3),
                })
    for row in rows:
        same = [x for x in rows if x["durability"] == row["durability"]
                and x["broker"] == row["broker"] and x["q"] == qs[0]][0]
        row["vs_q1"] = round(row["rec_per_s_median"] / same["rec_per_s_median"], 2)
    cols = list(rows[0].keys())
    print(" | ".join(cols))
    for row in rows:
        print(" | ".join(str(row[c]) for c in cols))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "parallel-appends.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["round", "broker", "durability", "q", "rps", "mbps",
                                              "appended", "cpu_s", "cpu_s_per_M"])
            w.writeheader()
            w.writerows(runs)
        with open(os.path.join(args.out, "parallel-appends-table.md"), "w") as f:
            f.write("Command: `" + " ".join([os.path.relpath(sys.argv[0], os.getcwd())]
                                            + sys.argv[1:]) + "`\n\n")
            f.write(f"{args.producers} producers on one streamlet, {args.chunk_size} chunks of "
                    f"{args.record_size} B records, {args.inflight} appends in flight per "
                    f"producer, --workers {args.workers}, {args.duration_s} s per run, "
                    f"{args.rounds} rounds, a fresh broker per run.\n\n")
            f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
            for row in rows:
                f.write("| " + " | ".join(str(row[c]) for c in cols) + " |\n")


if __name__ == "__main__":
    main()
