"""Yahoo Streaming Benchmark: YsbProducer writes ad events at a fixed rate into a fresh broker
while the YSB job (10 s tumbling event-time windows of views per campaign) reads them, one run per
rate and source mode. A run kept up when the job processed at least 95 % of the events/s the
producer sent, the producer reached 95 % of the asked rate, every fired window holds exactly the
views made for it, and the window latency did not grow over the run. The sustainable throughput
of a mode is the highest rate it kept up at (as AIR, Venugopal et al., section 5.2, measures it:
raise the rate until latency rises or windows go missing)."""
import csv
import glob
import os
import statistics
import time

from . import javatool, jobmodes, plots
from .kafka import Kafka
from .broker import Broker
from .concurrent import _samples, _wait_for_line
from .results import Results
from .sizes import parse_size

STREAM = "ysb"
JOB_START_TIMEOUT_S = 120
SEED = 42


PLOT_NOTE = ("Plot: [ysb.png](ysb.png), the p99 window latency over the events/s each producer "
             "delivered (not the rate asked); hollow points did not keep up, labelled with the "
             "rate asked where the producer fell short of it.")


def add_arguments(p):
    p.add_argument("--modes", default="pull,push,kafka",
                   help="source modes, in run order; a Nearstream mode with '+filter' (e.g. "
                        "push+filter) has the source drop every event but views (the job's own "
                        "filter; in the broker's push thread for push) with a JSON field filter, "
                        "'+contains' with a byte-substring filter")
    p.add_argument("--rates", default="100k,200k,400k,800k", help="producer events/s sweep")
    p.add_argument("--duration-s", type=int, default=40, help="producer run time per point")
    p.add_argument("--parallelism", type=int, default=2, help="job parallelism")
    p.add_argument("--producers", type=int, default=2, help="producer threads (rate in total)")
    # The same for both producers: Nearstream's chunk size and Kafka's batch.size. 256K, not the
    # clients' 64K/16K defaults: at 1M+ events/s of 240 B a 64K producer with one chunk in
    # flight per streamlet waits on acks (1.28 vs 1.51 M events/s alone on 2 cores).
    p.add_argument("--batch-bytes", default="256K", help="producer batch (chunk) size")
    p.add_argument("--streamlets", type=int, default=4)
    p.add_argument("--workers", type=int, default=2, help="broker --workers")
    p.add_argument("--out-of-orderness-ms", type=int, default=1000, help="watermark bound")
    p.add_argument("--drain-s", type=int, default=15,
                   help="time the job gets after the producer ends, to fire its last windows")
    p.add_argument("--heap", default="3g", help="job JVM heap")


def _rate(spec):
    spec = spec.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(spec[-1:], 1)
    return int(float(spec.rstrip("km")) * mult)


def window_latency_trend(results_dir):
    """(median latency of the first third of the windows, of the last third), by window end."""
    by_end = {}
    for f in glob.glob(os.path.join(results_dir, "ysb-windows-*.csv")):
        with open(f) as fh:
            for row in csv.DictReader(fh):
                by_end.setdefault(int(row["window_end"]), []).append(int(row["latency_ms"]))
    ends = sorted(by_end)
    if len(ends) < 2:
        return None, None
    third = max(1, len(ends) // 3)
    first = [v for e in ends[:third] for v in by_end[e]]
    last = [v for e in ends[-third:] for v in by_end[e]]
    return statistics.median(first), statistics.median(last)


def _mean_in_window(samples, start_ms, end_ms):
    values = [n for t, n in samples if start_ms <= t <= end_ms]
    return statistics.mean(values) if values else 0.0


def grew(first, last):
    """Latency grew: the last windows waited more than a second and half as long again more than
    the first ones (a job that falls behind adds its backlog to every later window)."""
    return first is None or last > first + max(1000, first / 2)


# What `+filter` and `+contains` modes pass as --source-filter: the YSB query's own filter (its
# event_type test stays in the job, where it now drops nothing), as a JSON field filter and as the
# byte substring the producer writes for a view (exact for these events, not for JSON in general).
SOURCE_FILTERS = {"filter": "event_type=view", "contains": 'contains:"event_type":"view"'}


def measure(args, workdir, mode, rate):
    point = f"{mode}-{rate}"
    source_mode, _, option = mode.partition("+")
    if (option and option not in SOURCE_FILTERS) or (option and source_mode == "kafka"):
        raise SystemExit(f"unknown mode '{mode}': only pull and push take '+filter' or "
                         "'+contains'")
    filtered = bool(option)
    results_dir = os.path.join(workdir, f"windows-{point}")
    table = os.path.join(workdir, "campaigns.csv")
    views_file = os.path.join(workdir, f"views-{point}.csv")
    # Kafka mode: a fresh Kafka node per point, as a fresh nearstreamd for the other modes.
    with (Kafka(workdir, {STREAM: args.streamlets}) if source_mode == "kafka"
          else Broker(workdir, workers=args.workers)) as broker:
        if source_mode == "kafka":
            inputs, address, target = {"kafka": broker}, broker.bootstrap, "kafka"
        else:
            broker.create_stream(STREAM, args.streamlets, retention_bytes="1G")
            inputs, address, target = {"broker": broker}, broker.address, "nearstream"
        javatool.run(workdir, "ysb-campaigns", "io.nearstream.benchmarks.workloads.YsbCampaigns",
                     ["--seed", SEED, "--out", table], timeout=120)
        job = jobmodes.start(
            source_mode, workdir, "ysb", STREAM, args.parallelism, inputs, heap=args.heap,
            duration_s=args.duration_s + args.drain_s + JOB_START_TIMEOUT_S,
            extra=["--output-dir", results_dir, "--ysb-campaigns", table,
                   "--out-of-orderness-ms", str(args.out_of_orderness_ms)]
                  + (["--source-filter", SOURCE_FILTERS[option]] if filtered else []),
            name=f"job-ysb-{point}")
        try:
            _wait_for_line(job, "SOURCE RUNNING", JOB_START_TIMEOUT_S)
            cpu0, job_cpu0 = broker.cpu(), job.cpu()
            start_ms = time.time() * 1000
            produced = javatool.run(
                workdir, f"ysb-producer-{point}", "io.nearstream.benchmarks.workloads.YsbProducer",
                ["--broker", address, "--target", target, "--stream", STREAM,
                 "--streamlets", args.streamlets,
                 "--campaigns", table, "--seed", SEED, "--events", rate * args.duration_s,
                 "--rate", rate, "--producers", args.producers, "--views-file", views_file,
                 "--batch-bytes", parse_size(args.batch_bytes)],
                timeout=args.duration_s * 10 + 120,
                # Events are short-lived garbage at millions per second, and what waits for an
                # acknowledgement (callbacks, Kafka's batches) lives a few milliseconds: a large
                # young generation copies those less often (1.58 -> 1.77 M events/s alone with
                # futures, 22 % less CPU).
                heap="3g", jvm_args=["-Xmn2g"])
            end_ms = time.time() * 1000
            time.sleep(args.drain_s)
            broker_cpu, job_cpu = broker.cpu() - cpu0, job.cpu() - job_cpu0
        finally:
            job.stop()
    samples = _samples(job.output())
    # The mean, not the median: the job's meters publish in batches of 4096 records, so single
    # seconds are coarse at low rates while their sum over the run is exact to a few batches.
    # The producer's own sending time, not its JVM's life (which starts by touching its heap).
    sending_from_ms = end_ms - produced["seconds"] * 1000
    job_eps = _mean_in_window(samples, sending_from_ms + 1000, end_ms - 1000)
    summary = javatool.run(workdir, f"ysb-summary-{point}",
                           "io.nearstream.benchmarks.workloads.YsbSummary",
                           [results_dir, views_file], timeout=120)
    first, last = window_latency_trend(results_dir)
    producer_eps = produced["events_per_s"]
    offered = producer_eps >= 0.95 * rate
    # The job meters what its source emits: with the source filtering, only the views.
    job_should_see = producer_eps * (produced["views"] / produced["events"] if filtered else 1)
    kept_up = (offered and job_eps >= 0.95 * job_should_see and summary["fired_windows_exact"]
               and not grew(first, last))
    seconds = (end_ms - start_ms) / 1000 + args.drain_s
    return dict(rate=rate, mode=mode, producer_eps=producer_eps, offered=offered, job_eps=job_eps,
                windows=summary["windows"], fired_windows_exact=summary["fired_windows_exact"],
                views_missing=summary["views_missing_in_fired_windows"],
                latency_p50_ms=summary["latency_ms"]["p50"],
                latency_p99_ms=summary["latency_ms"]["p99"],
                event_time_latency_p50_ms=summary["event_time_latency_ms"]["p50"],
                event_time_latency_p99_ms=summary["event_time_latency_ms"]["p99"],
                latency_first_third_ms=first if first is not None else -1,
                latency_last_third_ms=last if last is not None else -1,
                job_cpu_s_per_s=job_cpu / seconds, broker_cpu_s_per_s=broker_cpu / seconds,
                producer_cpu_s_per_s=produced["process_cpu_s"] / seconds,
                kept_up=kept_up)


def _sustainable(rows, mode, rates):
    rows = [r for r in rows if r["mode"] == mode]
    ok = [r["rate"] for r in rows if r["kept_up"]]
    if not ok:
        return f"below {rates[0]:,} events/s (the lowest rate tried)"
    best = max(ok)
    text = f"{best:,} events/s"
    if best == rates[-1]:
        text = f"at least {best:,} events/s (kept up at the highest rate tried)"
    short = [r["rate"] for r in rows if r["rate"] > best and not r["offered"]]
    if short:
        text += (f"; the producer did not reach {min(short):,} events/s, so that rate says "
                 "nothing about the job")
    return text


def run(args, out_dir, workdir):
    modes = args.modes.split(",")
    rates = sorted(_rate(r) for r in args.rates.split(","))
    columns = ["rate", "mode", "producer_eps", "offered", "job_eps", "windows",
               "fired_windows_exact", "views_missing", "latency_p50_ms", "latency_p99_ms",
               "event_time_latency_p50_ms", "event_time_latency_p99_ms", "latency_first_third_ms",
               "latency_last_third_ms",
               "job_cpu_s_per_s", "broker_cpu_s_per_s", "producer_cpu_s_per_s", "kept_up"]
    res = Results(out_dir, "ysb", columns)
    for rate in rates:
        for mode in modes:
            res.add(**measure(args, workdir, mode, rate))
    notes = [f"{args.duration_s} s of events per point at the given rate ({args.producers} "
             f"producer thread(s) batching {args.batch_bytes} bytes, {args.streamlets} streamlets,"
             f" broker --workers {args.workers}),"
             f" job parallelism {args.parallelism}, watermark bound {args.out_of_orderness_ms} ms;"
             f" the job gets {args.drain_s} s more to fire its windows. Fresh broker per point.",
             "job_eps: mean of the job's per-second event counts while the producer ran (for a "
             "'+filter' mode the views its source let through: the producer's events/s times "
             "its share of views is what it must reach). "
             "latency: a window result's emission minus its window end; event-time latency: "
             "emission minus the largest event time in the window (AIR's, Venugopal et al.). "
             "CPU s/s: the job JVM's and the broker's CPU seconds from the producer's start to "
             "the end of the drain, and the producer JVM's over its whole life, over that time.",
             "offered: the producer reached 95 % of the rate. "
             "kept_up: offered, job_eps >= 95 % of producer_eps (of its views, '+filter'), every "
             "fired window exact, and the median latency of the last third of the windows "
             "(by window end; at least two windows) not more than max(1 s, 50 %) above the first "
             "third's.",
             ""]
    for mode in modes:
        notes.append(f"- sustainable throughput, {mode}: {_sustainable(res.rows, mode, rates)}")
    notes += ["", PLOT_NOTE]
    res.markdown("YSB - sustainable throughput and window latency", args.command, notes)
    draw(res.csv_path, out_dir)
    return res


def draw(csv_path, out_dir):
    """p99 window latency over the events/s each producer delivered; hollow: not kept up."""
    plots.rate_sweep_plot(csv_path, os.path.join(out_dir, "ysb.png"),
                          "YSB: p99 window latency by delivered event rate")
