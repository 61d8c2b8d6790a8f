"""PNG figures shaped like the paper's: one line per series over a swept parameter.

matplotlib is not needed by the runner itself: plots are drawn by this module run inside a venv
(benchmarks/target/runner-venv, pinned by requirements.txt, created on first use), so a machine
without it still gets CSVs and tables.
"""
import csv
import json
import os
import subprocess
import sys

from . import paths

_VENV = os.path.join(paths.ROOT, "benchmarks", "target", "runner-venv")
_REQUIREMENTS = os.path.join(paths.ROOT, "benchmarks", "runner", "requirements.txt")


def _venv_python():
    python = os.path.join(_VENV, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", _VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "-r", _REQUIREMENTS], check=True)
    return python


def line_plot(csv_path, png_path, x, y, series, title, xlabel=None, ylabel=None, panels=None,
              logx=False):
    """Draws y over x, one line per distinct value of `series` (a column or a list of columns),
    one panel per distinct value of `panels` if given. Returns the PNG path, or None when the
    plotting venv cannot be set up (the CSV stays the result)."""
    spec = dict(csv=csv_path, png=png_path, x=x, y=y, series=series, title=title,
                xlabel=xlabel or x, ylabel=ylabel or y, panels=panels, logx=logx)
    try:
        python = _venv_python()
        subprocess.run([python, "-m", "nsbench.plots", json.dumps(spec)], check=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        return png_path
    except (subprocess.CalledProcessError, OSError) as e:
        print(f"warning: no plot for {csv_path}: {e}", file=sys.stderr)
        return None


def _draw(spec):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(spec["csv"]) as f:
        rows = list(csv.DictReader(f))
    series_cols = spec["series"] if isinstance(spec["series"], list) else [spec["series"]]
    panel_values = sorted({r[spec["panels"]] for r in rows}, key=_key) if spec["panels"] else [None]
    fig, axes = plt.subplots(1, len(panel_values), figsize=(5.5 * len(panel_values), 4),
                             squeeze=False, sharey=True)
    for ax, panel in zip(axes[0], panel_values):
        subset = [r for r in rows if panel is None or r[spec["panels"]] == panel]
        names = sorted({tuple(r[c] for c in series_cols) for r in subset})
        for name in names:
            pts = sorted(((_key(r[spec["x"]]), float(r[spec["y"]])) for r in subset
                          if tuple(r[c] for c in series_cols) == name), key=lambda p: p[0])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=" ".join(name))
        if spec["logx"]:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(spec["xlabel"])
        ax.set_title(f"{spec['panels']}={panel}" if panel is not None else spec["title"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel(spec["ylabel"])
    if spec["panels"]:
        fig.suptitle(spec["title"])
    fig.tight_layout()
    fig.savefig(spec["png"], dpi=110)


def _key(v):
    try:
        return float(v)
    except ValueError:
        return v


if __name__ == "__main__":
    _draw(json.loads(sys.argv[1]))
