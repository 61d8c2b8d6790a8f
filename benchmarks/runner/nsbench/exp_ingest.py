"""Fig. 3 of the pull-vs-push co-location paper (Marcu and Bouvry): ingestion - aggregate producer
throughput while sweeping producers and chunk size
(100-byte records, one stream, no consumers)."""
import csv

from . import perf, plots
from .broker import Broker
from .results import Results
from .sizes import int_list, size_list


def add_arguments(p):
    p.add_argument("--producers", default="1,2", help="Np values")
    p.add_argument("--chunk-sizes", default="4K,16K,64K,128K", help="CS values")
    p.add_argument("--streamlets", type=int, default=4, help="Ns")
    p.add_argument("--record-size", type=int, default=100)
    p.add_argument("--workers", type=int, default=2, help="broker --workers")
    p.add_argument("--duration-s", type=int, default=6)
    p.add_argument("--retention", default="512M", help="per streamlet, bounds broker memory")


def run(args, out_dir, workdir):
    res = Results(out_dir, "fig3-ingest", ["producers", "chunk_kib", "producer_rps",
                                           "producer_mbps", "broker_cpu_s_per_m"])
    for np_ in int_list(args.producers):
        for cs in size_list(args.chunk_sizes):
            with Broker(workdir, workers=args.workers) as broker:
                broker.create_stream("ingest", args.streamlets, retention_bytes=args.retention)
                cpu0 = broker.cpu()
                p = perf.start(broker, workdir, "ingest", np_, cs, args.record_size, args.duration_s)
                r = perf.result(p, args.duration_s + 60)
                cpu = broker.cpu() - cpu0
            produced = r["produced"]
            res.add(producers=np_, chunk_kib=cs >> 10, producer_rps=r["producer_rps"],
                    producer_mbps=r["producer_mbps"],
                    broker_cpu_s_per_m=cpu / (produced / 1e6) if produced else 0.0)
    res.markdown("Fig. 3 - ingestion", args.command,
                 ["Aggregate producer throughput (median records/s per second of the run), "
                  f"{args.record_size}-byte records, {args.streamlets} streamlets, broker "
                  f"--workers {args.workers}."])
    draw(res.csv_path, out_dir)
    return res


def draw(csv_path, out_dir):
    """Producers' records/s over the chunk size, one line per producer count."""
    with open(csv_path) as f:
        counts = {r["producers"] for r in csv.DictReader(f)}
    labels = {n: f"{n} producer{'s' if n != '1' else ''}" for n in counts}
    plots.line_plot(csv_path, f"{out_dir}/fig3-ingest.png", "chunk_kib", "producer_rps",
                    "producers", "Fig. 3: ingestion, producers x chunk size",
                    xlabel="chunk size (KiB)", ylabel="records/s appended (millions)", logx=True,
                    yscale=1e6, labels=labels)
