"""Results of an experiment: rows written to CSV as they come, a Markdown table at the end."""
import csv
import os


class Results:
    def __init__(self, out_dir, name, columns):
        os.makedirs(out_dir, exist_ok=True)
        self.out_dir = out_dir
        self.name = name
        self.columns = columns
        self.rows = []
        self.csv_path = os.path.join(out_dir, f"{name}.csv")
        with open(self.csv_path, "w", newline="") as f:
            csv.writer(f).writerow(columns)

    def add(self, **row):
        missing = [c for c in self.columns if c not in row]
        if missing:
            raise ValueError(f"row lacks {missing}")
        self.rows.append(row)
        with open(self.csv_path, "a", newline="") as f:
            csv.writer(f).writerow([_fmt(row[c]) for c in self.columns])
        print("  " + "  ".join(f"{c}={_fmt(row[c])}" for c in self.columns), flush=True)

    def markdown(self, title, command, notes=(), columns=None):
        columns = columns or self.columns
        lines = [f"# {title}", "", f"Command: `{command}`", ""]
        lines += [f"{n}" for n in notes]
        if notes:
            lines.append("")
        lines.append("| " + " | ".join(columns) + " |")
        lines.append("|" + "---|" * len(columns))
        for r in self.rows:
            lines.append("| " + " | ".join(_fmt(r.get(c, "")) for c in columns) + " |")
        path = os.path.join(self.out_dir, f"{self.name}.md")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path


def _fmt(v):
    if isinstance(v, float):
        if v == 0 or abs(v) >= 100:
            return f"{v:.0f}"
        return f"{v:.3g}"
    return str(v)
