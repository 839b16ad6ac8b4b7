#!/usr/bin/env python3
"""Turns the text output of `make bench-lib` into the tables of docs/RESULTS.md (p50 of each metric).

    make bench-lib 2>&1 | tee bench.log; python3 Benchmarks/summarize.py bench.log
"""
import re
import sys

SECTION = re.compile(r"^(\d\d[a-z]? .*) \(items: (\d+)\)$")
ROW = re.compile(r"^│ (.+?)\s+│(.*)│\s*$")
SCALE = {"K": 1e3, "M": 1e6, "G": 1e9}
TIME = {"ns": 1e-9, "μs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def parse(lines):
    results = {}  # (name, items) -> {metric: (p50 in base units, samples)}
    current = None
    for line in lines:
        line = line.rstrip("\n")
        m = SECTION.match(line)
        if m:
            current = (m.group(1), int(m.group(2)))
            results.setdefault(current, {})
            continue
        m = ROW.match(line)
        if not (m and current) or m.group(1).startswith("Metric"):
            continue
        label = m.group(1).rstrip(" *")
        cells = [c.strip() for c in m.group(2).split("│")]
        if len(cells) < 8:
            continue
        p50, samples = float(cells[2]), int(cells[7])
        units = re.findall(r"\(([^()]*)\)", label)
        name = re.sub(r"\s*\([^()]*\)$", "", label) if units and (units[-1] in SCALE or units[-1] in TIME or units[-1] in ("#",)) else label
        unit = units[-1] if units else ""
        if not label.startswith(("Time", "Malloc", "Memory", "Throughput")):
            # A custom metric: its own unit is part of its name; a scale may follow.
            if unit in SCALE:
                p50 *= SCALE[unit]
            name, unit = re.sub(r"\s*\((K|M|G)\)$", "", label), ""
        if unit in TIME:
            p50 *= TIME[unit]
        elif unit in SCALE:
            p50 *= SCALE[unit]
        results[current][name] = (p50, samples)
    return results


def fmt_time(s):
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def fmt_count(n):
    return f"{n / 1e3:.0f}k" if n >= 1e4 else f"{n:.0f}"


def main(path):
    with open(path, encoding="utf-8") as f:
        results = parse(f)
    sizes = sorted({n for _, n in results})
    print("| operation | " + " | ".join(f"{n:,} items" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name in sorted({name for name, _ in results}):
        cells = []
        for n in sizes:
            r = results.get((name, n), {})
            wall = r.get("Time (wall clock)")
            if wall is None:
                custom = ", ".join(f"{k} {v[0]:.0f}" for k, v in r.items() if "Memory" not in k)
                cells.append(custom or "–")
                continue
            mallocs = r.get("Malloc (total)")
            rss = r.get("Memory (resident peak)")
            cell = fmt_time(wall[0])
            if mallocs:
                cell += f" · {fmt_count(mallocs[0])} mallocs"
            if rss:
                cell += f" · {rss[0] / 1e6:.0f} MB"
            cell += f" ({wall[1]})"
            cells.append(cell)
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/dev/stdin")
