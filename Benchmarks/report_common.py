"""What the benchmarks' reports and plots.py share (Python 3 stdlib only):
reading their inputs (metadata, CSV, nginx's log, file sizes), statistics,
number formats, Markdown and matplotlib."""

import csv
import math
import re
import statistics
import sys
from collections import defaultdict, namedtuple

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


class Request(namedtuple("Request", "end conn status sent took rate uri range agent proto")):
    """One line of nginx's log: end is when the response ended ($msec), took its $request_time."""

    @property
    def start(self):
        return self.end - self.took


# nginx.conf.in's "bench" format: $msec $connection $connection_requests $status $body_bytes_sent
# $request_time $limit_rate $uri "$http_range" "$http_user_agent" $server_protocol (older logs lack the last)
LOG_LINE = re.compile(r'^(\S+) (\d+) \d+ (\d+) (\d+) (\S+) (\d*) (\S+) "([^"]*)" "(.*)"(?: (\S+))?$')


def read_access_log(path):
    """nginx's log as a Request per line, None for a line it cannot read, so that the line numbers the
    scripts note index it; [] when there is no log."""
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    with f:
        for line in f:
            m = LOG_LINE.match(line.rstrip("\n"))
            out.append(Request(float(m[1]), int(m[2]), int(m[3]), int(m[4]), float(m[5]), int(m[6] or 0), m[7],
                               m[8], m[9], m[10] or "") if m else None)
    return out


def read_sizes(path):
    """{URI: bytes} from the scripts' sizes.tsv ("URI<TAB>size" lines)."""
    sizes = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) == 2 and p[1].isdigit():
                sizes[p[0]] = int(p[1])
    return sizes


def load_pyplot(who):
    """matplotlib's pyplot (Agg backend), or None, said on stderr, when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        sys.stderr.write(f"{who}: matplotlib is not installed (scripts/install-deps.sh bench); no plots\n")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


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
