"""What e2e_report.py and playback_report.py share (Python 3 stdlib only):
reading their inputs, statistics, number formats and Markdown."""

import csv
import math
import statistics
import sys
from collections import defaultdict

MIB = 1048576


def parse_meta(path):
    """The metadata file ("key<TAB>values..." lines) as (single, multi):
    single[key] is the last line's values (a lone value unwrapped),
    multi[key] every line's values."""
    single, multi = {}, defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if not parts or not parts[0]:
                continue
            key, vals = parts[0], parts[1:]
            multi[key].append(vals)
            single[key] = vals[0] if len(vals) == 1 else vals
    return single, multi


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def fnum(x):
    """A CSV field as a float, NaN when it is empty or not a number."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def isnan(x):
    return x is None or (isinstance(x, float) and math.isnan(x))


def med(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else math.nan


def fmt(x, nd=2):
    return "—" if isnan(x) else f"{x:.{nd}f}"


def med_range(xs, nd=2):
    """Median with the range in brackets when there is more than one value."""
    ok = [x for x in xs if not math.isnan(x)]
    if not ok:
        return "—"
    s = fmt(med(ok), nd)
    if len(ok) > 1:
        s += f" ({min(ok):.{nd}f}–{max(ok):.{nd}f})"
    return s


def runs_ok_cell(ok, n, fail):
    """"ok/n", with the failures by kind ({kind: count}) in brackets."""
    s = f"{ok}/{n}"
    if fail:
        s += " (" + ", ".join(f"{k}×{v}" for k, v in sorted(fail.items())) + ")"
    return s


def md_row(cells):
    return "| " + " | ".join(cells) + " |"


def md_rule(align):
    """The line under a table's header; align: "l" or "r" per column."""
    return "|" + "".join("---:|" if a == "r" else "---|" for a in align)


def report_head(title, meta, metas):
    """The report's first lines: title, date, machine, where the files were and versions."""
    lines = [f"# {title} — {meta.get('date', '')}", "", "## Setup", "",
             f"- Machine: {meta.get('nproc', '?')} CPUs ({meta.get('cpu', '?')}), {meta.get('mem', '?')} RAM, "
             f"{meta.get('os', '?')}, kernel {meta.get('kernel', '?')}"]
    # (runs from before the files moved to disk have "tmpfs", the device of theirs)
    files = meta.get("files_fs") or meta.get("tmpfs")
    if files:
        lines.append(f"- Files (the origin's and the tools' outputs): {files}")
    for v in metas.get("version", []):
        lines.append(f"- {v[0]}: `{v[1] if len(v) > 1 else '?'}`")
    return lines


def write_report(lines, path):
    """Prints the report and writes it to path."""
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
