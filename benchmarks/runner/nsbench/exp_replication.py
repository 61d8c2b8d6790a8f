"""Replication's cost to producers, the colocation paper's Fig. 3 with a backup: producers only,
replication 1 vs 2 over chunk sizes, on two brokers kept in ZooKeeper (docs/cluster.md,
"Replication"). With replication 2 every chunk is acknowledged only once the other broker holds
it, so each append waits for one more round trip and the backup's write. Each point also reports
the brokers' CPU seconds per million records. Then the failover time: the leader of a replicated
streamlet killed with SIGKILL, to the first append the new leader acknowledges, as `nearstream
produce` (which follows the failover) sees it, with the ZooKeeper session timeout used.

With --txn-chunks N the producers write transactions instead (TxnBegin, N appends of one chunk
per streamlet with up to --inflight of them in flight, as a sink's producer keeps them, then
TxnPrepare and TxnCommit; records counted once committed; --inflight 1 sends one request at a time):
replication 2 then also copies every transaction write to the backup (docs/cluster.md,
"Replication", "Transactions")."""
import os
import signal
import subprocess
import time
from contextlib import ExitStack

from . import paths, perf, plots
from .broker_cluster import Bootstrap, BrokerCluster, replica_set
from .results import Results
from .sizes import size_list


def add_arguments(p):
    p.add_argument("--chunk-sizes", default="1K,4K,16K,64K")
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--streamlets", type=int, default=2,
                   help="streamlets of the stream: with 2, each broker leads one and backs up "
                        "the other")
    p.add_argument("--producers", type=int, default=2)
    p.add_argument("--all-streamlets", action="store_true",
                   help="each request carries one chunk for every streamlet of its broker, as "
                        "the colocation paper's producers send them (with --streamlets 16 and "
                        "--inflight 1: its Fig. 3 setting, 8 partitions per broker, one "
                        "synchronous request each)")
    p.add_argument("--inflight", type=int, default=4,
                   help="append requests in flight per producer: with replication each round "
                        "trip to the backup carries at most this many of a producer's chunks")
    p.add_argument("--workers", type=int, default=1, help="broker --workers")
    p.add_argument("--durability", default="async")
    p.add_argument("--duration-s", type=int, default=10)
    p.add_argument("--retention", default="256M", help="per streamlet, bounds broker memory")
    p.add_argument("--session-ms", type=int, default=6000,
                   help="ZooKeeper session timeout of the brokers (the failover waits for it)")
    p.add_argument("--failovers", type=int, default=3, help="failover measurements")
    p.add_argument("--repetitions", type=int, default=1)
    p.add_argument("--follower-reads", action="store_true",
                   help="brokers started with --follower-reads (followers keep copies in "
                        "memory, told what to show by views)")
    p.add_argument("--txn-chunks", type=int, default=0,
                   help="producers write transactions of this many chunks per streamlet "
                        "(0: plain appends)")


def _cluster(stack, workdir, args, count=2):
    extra = ["--follower-reads"] if args.follower_reads else []
    return stack.enter_context(BrokerCluster(workdir, count, workers=args.workers,
                                             session_ms=args.session_ms, extra=extra)).brokers


def _create(broker, args, replication, streamlets):
    broker.cli("create", "repl", "--streamlets", str(streamlets), "--durability",
               args.durability, "--replication", str(replication), "--retention-bytes",
               args.retention)


def _failover_ms(workdir, args):
    """Kills the leader of a one-streamlet replicated stream; the time until `nearstream
    produce`, started right after the kill with every broker's address, has its record
    acknowledged (by the new leader)."""
    with ExitStack() as stack:
        brokers = _cluster(stack, workdir, args)
        _create(brokers[0], args, 2, 1)
        bootstrap = ",".join(b.address for b in brokers)
        subprocess.run([paths.binary("nearstream"), "--broker", bootstrap, "produce", "repl"],
                       input="before\n", check=True, capture_output=True, text=True)
        leader, _ = replica_set(brokers[0], "repl", 0)
        killed = time.monotonic()
        os.kill(brokers[leader - 1].process.pid, signal.SIGKILL)
        after = subprocess.run(
            [paths.binary("nearstream"), "--broker", bootstrap, "produce", "repl"],
            input="after\n", capture_output=True, text=True)
        if after.returncode != 0:
            raise RuntimeError("produce after the kill failed: " + after.stderr)
        return (time.monotonic() - killed) * 1000


def run(args, out_dir, workdir):
    res = Results(out_dir, "replication",
                  ["chunk_size", "replication", "repetition", "producer_rps", "produced",
                   "broker_cpu_s", "cpu_s_per_m"])
    for repetition in range(args.repetitions):
        for chunk in size_list(args.chunk_sizes):
            for replication in (1, 2):
                with ExitStack() as stack:
                    brokers = _cluster(stack, workdir, args)
                    _create(brokers[0], args, replication, args.streamlets)
                    cpu0 = [b.cpu() for b in brokers]
                    p = perf.start(Bootstrap(brokers), workdir, "repl", args.producers, chunk,
                                   args.record_size, args.duration_s, consumers=0,
                                   inflight=args.inflight, txn_chunks=args.txn_chunks,
                                   all_streamlets=args.all_streamlets)
                    r = perf.result(p, args.duration_s + 60)
                    cpu = sum(b.cpu() - c for b, c in zip(brokers, cpu0))
                produced = r["produced"]
                res.add(chunk_size=chunk, replication=replication, repetition=repetition,
                        producer_rps=r["producer_rps"], produced=int(produced), broker_cpu_s=cpu,
                        cpu_s_per_m=cpu / (produced / 1e6) if produced else 0.0)
    failovers = [_failover_ms(workdir, args) for _ in range(args.failovers)]
    res.markdown(
        "Replication: producers with replication 1 vs 2, and the failover time", args.command,
        [f"Two brokers (--workers {args.workers}"
         + (", --follower-reads" if args.follower_reads else "")
         + f") and ZooKeeper on one machine; a stream of "
         f"{args.streamlets} streamlets, durability {args.durability}, {args.record_size}-byte "
         f"records, {args.producers} nearstream-perf producers ({args.inflight} requests in flight "
         f"each"
         + (", each request one chunk for every streamlet of its broker" if args.all_streamlets
            else "")
         + f"), no consumers, {args.duration_s} s per point"
         + (f"; the producers write transactions of {args.txn_chunks} chunks per streamlet "
            f"(TxnBegin, the appends with up to {args.inflight} in flight, TxnPrepare, "
            "TxnCommit; records count once committed)" if args.txn_chunks else "")
         + ". producer_rps: median records/s of the run's seconds; cpu_s_per_m: both "
         "brokers' CPU seconds (user + system, from /proc) per million records appended.",
         *([f"Failover (replication 2, ZooKeeper session {args.session_ms} ms): SIGKILL of the "
            "leader to the first append acknowledged by the new leader, "
            f"{len(failovers)} runs: " + ", ".join(f"{ms:.0f} ms" for ms in failovers) + "."]
           if failovers else [])])
    draw(res.csv_path, out_dir)
    return res


def draw(csv_path, out_dir):
    plots.line_plot(csv_path, f"{out_dir}/replication.png", "chunk_size", "producer_rps",
                    "replication", "Producers with replication 1 vs 2 (two brokers)",
                    xlabel="chunk size (bytes)", ylabel="records/s appended (millions)",
                    logx=True, yscale=1e6, labels={"1": "replication 1", "2": "replication 2"})
