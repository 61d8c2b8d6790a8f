"""PNG figures of the experiments, drawn from their CSV files so they can be redrawn at any time
without re-running anything (`benchmarks/runner/run.py plot`).

Rules every figure follows, so it reads right at a glance:
- throughput axes start at 0 and are in plain numbers with their unit in the label ("records/s
  (millions)"), never in matplotlib's 1e7 offset notation;
- a swept parameter gets one tick per value it took, labelled as the value (16, 64, 128 KiB), even
  on a log axis;
- a series keeps its colour in every figure (pull blue, push orange, Kafka green, C++ pull grey);
- with repetitions, the line joins the medians and every run is a small dot of the same colour;
- a rate sweep is drawn over the rate the producer delivered, not the rate it was asked for, and
  a point that did not keep up is hollow.

matplotlib is not needed by the runner itself: when the interpreter running the runner lacks it,
plots are drawn by this module run inside a venv (benchmarks/target/runner-venv, pinned by
requirements.txt, created on first use), so a machine without it still gets CSVs and tables.
"""
import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys

from . import paths

_VENV = os.path.join(paths.ROOT, "benchmarks", "target", "runner-venv")
_REQUIREMENTS = os.path.join(paths.ROOT, "benchmarks", "runner", "requirements.txt")

# One colour per source/consumer kind, the same in every figure.
_COLORS = {"pull": "#1f77b4", "push": "#ff7f0e", "kafka": "#2ca02c", "cpp-pull": "#7f7f7f",
           "nearstream-alo": "#ff7f0e", "nearstream-eo": "#c45a00", "kafka-alo": "#2ca02c",
           "kafka-eo": "#1a6b1a", "discard": "#7f7f7f"}
_OTHER_COLORS = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#d62728"]

# How series and panels are named in legends and titles.
MODE_LABELS = {"pull": "Flink pull", "push": "Flink push", "push-view": "Flink push, view slots",
               "auto": "Flink auto",
               "kafka": "Flink Kafka source", "cpp-pull": "C++ pull (nearstream-perf)"}
PRODUCER_LABELS = {k: f"beside {v} consumers" for k, v in MODE_LABELS.items()}
WORKLOAD_LABELS = {"wordcount": "word count", "windowed-wordcount": "windowed word count"}


def _plot_python():
    if importlib.util.find_spec("matplotlib") is not None:
        return sys.executable
    python = os.path.join(_VENV, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", _VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "-r", _REQUIREMENTS], check=True)
    return python


def _run(spec):
    try:
        python = _plot_python()
        subprocess.run([python, "-m", "nsbench.plots", json.dumps(spec)], check=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return spec["png"]
    except (subprocess.CalledProcessError, OSError) as e:
        print(f"warning: no plot for {spec['csv']}: {e}", file=sys.stderr)
        return None


def line_plot(csv_path, png_path, x, y, series, title, xlabel=None, ylabel=None, panels=None,
              logx=False, yscale=1.0, labels=None, panel_labels=None, sharey=True):
    """Draws y / yscale over x, one line per distinct value of `series` (a column or a list of
    columns) through the medians of its repetitions, every run a dot; one panel per distinct
    value of `panels` if given (and present in the CSV with more than one value). `labels` and
    `panel_labels` map CSV values to the names shown. Returns the PNG path, or None when the
    plotting venv cannot be set up (the CSV stays the result)."""
    return _run(dict(kind="lines", csv=csv_path, png=png_path, x=x, y=y, series=series,
                     title=title, xlabel=xlabel or x, ylabel=ylabel or y, panels=panels,
                     logx=logx, yscale=yscale, labels=labels or {},
                     panel_labels=panel_labels or {}, sharey=sharey))


def rate_sweep_plot(csv_path, png_path, title, y="latency_p99_ms", ylabel="p99 window latency (s)",
                    yscale=1000.0):
    """A rate sweep (YSB): y over the events/s each mode's producer delivered (`producer_eps`),
    one line per `mode`; a point whose `kept_up` is False is hollow, with a note on why: the rate
    asked when the producer delivered less than 95 % of it (`offered` False), else what failed."""
    return _run(dict(kind="rate_sweep", csv=csv_path, png=png_path, title=title, y=y,
                     ylabel=ylabel, yscale=yscale))


def bar_plot(csv_path, png_path, category, panels, title, labels=None, only=None):
    """One panel per (column, axis label, scale) of `panels`: a bar per distinct value of
    `category` (in the CSV's order; only those in `only` if given) at the median of its rows'
    column / scale, every row a dot."""
    return _run(dict(kind="bars", csv=csv_path, png=png_path, category=category,
                     panels=[list(p) for p in panels], title=title, labels=labels or {},
                     only=only))


# ---- drawing (runs where matplotlib is installed) ----------------------------------------------

def _color(name, seen):
    if name in _COLORS:
        return _COLORS[name]
    if name not in seen:
        seen[name] = _OTHER_COLORS[len(seen) % len(_OTHER_COLORS)]
    return seen[name]


def _plain(v):
    return f"{v:g}" if isinstance(v, float) else str(v)


def _draw_lines(spec, plt):
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullLocator

    with open(spec["csv"]) as f:
        rows = list(csv.DictReader(f))
    series_cols = spec["series"] if isinstance(spec["series"], list) else [spec["series"]]
    panel_col = spec["panels"]
    if panel_col and len({r.get(panel_col) for r in rows}) < 2:
        panel_col = None
    # Panels in the order the CSV has them (the order the experiment ran its settings).
    panel_values = list(dict.fromkeys(r[panel_col] for r in rows)) if panel_col else [None]
    fig, axes = plt.subplots(1, len(panel_values), figsize=(5.5 * len(panel_values), 4.2),
                             squeeze=False, sharey=spec["sharey"])
    others = {}
    repeated = False
    handles = {}
    ymax = {}
    for ax, panel in zip(axes[0], panel_values):
        subset = [r for r in rows if panel is None or r[panel_col] == panel]
        names = sorted({tuple(r[c] for c in series_cols) for r in subset})
        xs_all = sorted({_key(r[spec["x"]]) for r in subset})
        for name in names:
            key = " ".join(name)
            label = spec["labels"].get(key, key)
            color = _color(key, others)
            by_x = {}
            for r in subset:
                if tuple(r[c] for c in series_cols) == name:
                    by_x.setdefault(_key(r[spec["x"]]), []).append(float(r[spec["y"]]) /
                                                                   spec["yscale"])
            xs = sorted(by_x)
            med = [statistics.median(by_x[v]) for v in xs]
            ymax[ax] = max([ymax.get(ax, 0.0)] + [u for v in xs for u in by_x[v]])
            (line,) = ax.plot(xs, med, marker="o", color=color, label=label, zorder=3)
            handles.setdefault(label, line)
            if any(len(by_x[v]) > 1 for v in xs):
                repeated = True
                ax.scatter([v for v in xs for _ in by_x[v]], [u for v in xs for u in by_x[v]],
                           s=14, color=color, alpha=0.45, zorder=2, linewidths=0)
        if spec["logx"]:
            ax.set_xscale("log", base=2)
        numeric = all(isinstance(v, float) for v in xs_all)
        if numeric and (spec["logx"] or len(xs_all) <= 8):
            ax.set_xticks(xs_all)
            ax.set_xticklabels([_plain(v) for v in xs_all])
            ax.xaxis.set_minor_locator(NullLocator())
            if spec["logx"] and len(xs_all) > 1:
                ax.set_xlim(xs_all[0] / 1.25, xs_all[-1] * 1.25)
            elif len(xs_all) > 1:
                pad = (xs_all[-1] - xs_all[0]) * 0.15
                ax.set_xlim(xs_all[0] - pad, xs_all[-1] + pad)
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.set_xlabel(spec["xlabel"])
        if panel is not None:
            default = panel if "=" in panel else f"{panel_col} = {panel}"
            ax.set_title(spec["panel_labels"].get(panel, default), fontsize=10)
        else:
            ax.set_title(spec["title"], fontsize=11)
        ax.grid(True, alpha=0.3)
        if not spec["sharey"]:
            ax.set_ylabel(spec["ylabel"])
    top = max(ymax.values(), default=0.0)
    for ax in axes[0]:
        _zero_based(ax, top if spec["sharey"] else ymax.get(ax, 0.0))
    axes[0][0].set_ylabel(spec["ylabel"])
    legend = list(handles.values())
    if repeated:
        legend.append(Line2D([], [], color="0.35", marker="o", linestyle="", markersize=4,
                             alpha=0.6, label="each run (line: median of the runs)"))
    axes[0][-1].legend(handles=legend, fontsize=8, loc="best")
    if panel_col:
        fig.suptitle(spec["title"], fontsize=11)
    fig.tight_layout()
    fig.savefig(spec["png"], dpi=110)


def _draw_rate_sweep(spec, plt):
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    with open(spec["csv"]) as f:
        rows = list(csv.DictReader(f))
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    others = {}
    modes = sorted({r["mode"] for r in rows}, key=lambda m: (m not in _COLORS, m))
    xmax = 0.0
    for mode in modes:
        color = _color(mode, others)
        pts = sorted((float(r["producer_eps"]) / 1e6, float(r[spec["y"]]) / spec["yscale"],
                      r["kept_up"] == "True", _why_not_kept_up(r))
                     for r in rows if r["mode"] == mode)
        xmax = max([xmax] + [p[0] for p in pts])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, zorder=2,
                label=MODE_LABELS.get(mode, mode))
        notes = 0
        for x, yv, kept, why in pts:
            ax.scatter([x], [yv], s=46, zorder=3, linewidths=1.6, edgecolors=color,
                       facecolors=color if kept else "white")
            if not kept:
                # Alternate below and above, so that neighbouring points' notes do not overlap.
                ax.annotate(why, (x, yv), textcoords="offset points", fontsize=7.5, color=color,
                            xytext=(7, -13) if notes % 2 == 0 else (7, 7))
                notes += 1
    ax.set_xlim(0, xmax * 1.12 if xmax else 1)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=8))
    _zero_based(ax, max((float(r[spec["y"]]) / spec["yscale"] for r in rows), default=0.0))
    ax.set_xlabel("events/s the producer delivered (millions)")
    ax.set_ylabel(spec["ylabel"])
    ax.set_title(spec["title"], fontsize=11)
    ax.grid(True, alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="0.3", marker="o", linestyle="", markersize=6,
                       label="kept up"),
                Line2D([], [], color="0.3", marker="o", linestyle="", markersize=6,
                       markerfacecolor="white", markeredgewidth=1.4,
                       label="did not keep up")]
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(spec["png"], dpi=110)


def _draw_bars(spec, plt):
    with open(spec["csv"]) as f:
        rows = list(csv.DictReader(f))
    names = [n for n in dict.fromkeys(r[spec["category"]] for r in rows)
             if not spec["only"] or n in spec["only"]]
    panels = spec["panels"]
    fig, axes = plt.subplots(1, len(panels), figsize=((1.1 * len(names) + 1.4) * len(panels), 4.2),
                             squeeze=False)
    others = {}
    colors = [_color(n, others) for n in names]
    for ax, (column, ylabel, scale) in zip(axes[0], panels):
        values = [[float(r[column]) / scale for r in rows if r[spec["category"]] == n]
                  for n in names]
        ax.bar(range(len(names)), [statistics.median(v) for v in values], color=colors,
               alpha=0.8, zorder=2)
        for i, v in enumerate(values):
            ax.scatter([i] * len(v), v, s=14, color="0.15", alpha=0.6, zorder=3, linewidths=0)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([spec["labels"].get(n, n) for n in names], fontsize=8)
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        _zero_based(ax, max((u for v in values for u in v), default=0.0))
        ax.set_ylabel(ylabel)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(spec["title"] + " (bar: median of the runs, dot: each run)", fontsize=10)
    fig.tight_layout()
    fig.savefig(spec["png"], dpi=110)


def _zero_based(ax, data_max):
    """y from 0 to the first round tick above the data, so the top gridline is labelled."""
    from matplotlib.ticker import MaxNLocator

    locator = MaxNLocator(nbins=6)
    ticks = [t for t in locator.tick_values(0, data_max * 1.04 if data_max > 0 else 1) if t >= 0]
    ax.set_ylim(0, ticks[-1])
    ax.set_yticks(ticks)


def _why_not_kept_up(r):
    """A few words on why a rate-sweep point did not keep up (exp_ysb's rule, in its order)."""
    if r["offered"] != "True":
        return f"asked {float(r['rate']) / 1e6:g} M"
    if float(r["job_eps"]) < 0.95 * float(r["producer_eps"]):
        return "job fell behind"
    if r.get("fired_windows_exact", "True") != "True":
        return "windows not exact"
    return "latency grew"


def _draw(spec):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    {"lines": _draw_lines, "rate_sweep": _draw_rate_sweep,
     "bars": _draw_bars}[spec["kind"]](spec, plt)
    plt.close("all")


def _key(v):
    try:
        return float(v)
    except ValueError:
        return v


if __name__ == "__main__":
    _draw(json.loads(sys.argv[1]))
