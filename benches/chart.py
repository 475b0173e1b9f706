#!/usr/bin/env python3
"""The headline chart: protojit's decode speed over each peer's, per public payload.

    python3 benches/chart.py [--rounds FILE] [--peers FILE] [--out FILE]

Reads what the benches print (Python 3.11 standard library only; the SVG is written by hand):

- ``--rounds`` (default ``benches/results/rounds.txt``): the stdout of
  ``cargo bench --bench rounds -- --generated`` (or without ``--generated``). The
  ``decode`` tables' ``jit ÷ prost_reuse`` and ``jit ÷ prost_reflect`` columns give the
  first two panels.
- ``--peers`` (default ``benches/results/peers.txt``, left out when absent): the stdout of
  ``bash benches/peers/run.sh``. Its ``protojit_jit ÷ cpp_reuse`` column gives the
  libprotobuf panel.

Each ratio cell is ``median [min–max]`` over the interleaved rounds: the bar is the median
(DESIGN.md, "Performance method"), the thin line the min–max. The payloads are the 13 of the
public corpus; the geometric mean of their medians is the last row of each panel, and is
checked against the one the bench printed. A line ``run: ...`` inside an HTML comment at the
top of an input file names the run in the chart's footer (the file's name otherwise).

Writes ``--out`` (default ``docs/ratios.svg``). A fresh chart after a run:

    cargo bench --bench rounds -- --generated | tee benches/results/rounds.txt
    bash benches/peers/run.sh | tee benches/results/peers.txt
    python3 benches/chart.py
"""
import argparse
import math
import os
import re
import sys
from html import escape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The public corpus (DESIGN.md, "Performance method"), in the benches' order.
PUBLIC = [
    "gm1_proto2", "gm1_proto3", "gm2",
    "osm_header", "osm_dense", "osm_ways", "osm_relations",
    "mvt_chicago", "mvt_sanfrancisco", "mvt_astana", "mvt_vtjs",
    "descriptor_fds", "descriptor_fds_srcinfo",
]

# Panels: (input, numerator arm, denominator arm, title, subtitle, bar colour).
PANELS = [
    ("rounds", "jit", "prost_reuse", "× prost", "generated Rust, one struct reused", "#2f6fb0"),
    ("rounds", "jit", "prost_reflect", "× prost-reflect", "dynamic Rust (DynamicMessage)", "#3f8f5a"),
    ("peers", "protojit_jit", "cpp_reuse", "× libprotobuf", "generated C++, one message reused", "#b0562f"),
]

CELL = re.compile(r"^(\d+(?:\.\d+)?) \[(\d+(?:\.\d+)?)[–-](\d+(?:\.\d+)?)\]$")
GEOMEAN_CELL = re.compile(r"^(\d+(?:\.\d+)?) \(min")


def fail(msg):
    print(f"chart.py: {msg}", file=sys.stderr)
    sys.exit(1)


def parse(path):
    """Ratio cells of a bench's output, decode mode only.

    Returns (ratios, geomeans, run): ratios[(num, den)][payload] = (median, lo, hi);
    geomeans[(num, den)][row label] = value; run = the ``run:`` line or None.
    """
    ratios, geomeans, run = {}, {}, None
    mode = "decode"  # the peers' script prints decode tables only, under no heading
    header = None
    in_comment = False
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        stripped = line.strip()
        if stripped.startswith("<!--"):
            in_comment = True
        if in_comment:
            text = stripped.removeprefix("<!--").removesuffix("-->").strip()
            if text.startswith("run:") and run is None:
                run = text[len("run:"):].strip()
            if stripped.endswith("-->"):
                in_comment = False
            continue
        m = re.match(r"^#+ `(\w+)`", line)
        if m:
            mode = m.group(1)
            header = None
            continue
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("-:"):
            continue
        if mode != "decode":
            continue
        for name, cell in zip(header[1:], cells[1:]):
            if "÷" not in name:
                continue
            num, den = (s.strip() for s in name.split("÷"))
            m = CELL.match(cell)
            if m:
                ratios.setdefault((num, den), {})[cells[0]] = tuple(float(x) for x in m.groups())
                continue
            m = GEOMEAN_CELL.match(cell)
            if m:
                geomeans.setdefault((num, den), {})[cells[0]] = float(m.group(1))
    return ratios, geomeans, run


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def nice_max(v):
    """The smallest of 1, 2, 2.5, 5 × 10^k at or above v."""
    k = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * k >= v:
            return m * k
    return 10 * k


def ticks(top):
    """Tick values from 0 to top, 4-6 of them."""
    for step in (0.5, 1, 2, 5, 10, 20, 25, 50, 100):
        if top / step <= 6:
            break
    return [i * step for i in range(int(round(top / step)) + 1)]


def fmt_tick(v):
    return f"{v:g}×"


def svg(panels, runs):
    label_w, panel_w, gap, margin = 150, 250, 28, 16
    row_h, bar_h = 20, 12
    title_h, head_h, axis_h = 46, 40, 22
    rows = PUBLIC + [None, "geomean"]  # None: a gap before the geometric mean
    plot_h = row_h * len(rows)
    foot_lines = [
        "Bar: median over the rounds of the per-round ratio (arms interleaved on the same bytes); "
        "thin line: its min–max over the rounds.",
        "Dashed line: 1× (as fast as the peer). Geometric mean over these 13 payloads. Decode only; "
        "protojit's eager JIT engine, arena reset between decodes.",
    ] + [f"{name}: {run}" for name, run in runs]
    foot_h = 16 * len(foot_lines) + 8
    width = margin * 2 + label_w + len(panels) * panel_w + (len(panels) - 1) * gap
    height = title_h + head_h + plot_h + axis_h + foot_h
    top = title_h + head_h
    out = []
    w = out.append
    w(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
      f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">')
    w("<title>protojit decode speed over prost, prost-reflect and libprotobuf, per payload</title>")
    desc = "; ".join(
        f"{p['title']}: geometric mean {p['geomean']:.2f}" for p in panels
    )
    w(f"<desc>{escape(desc)}</desc>")
    w(f'<rect width="{width}" height="{height}" fill="#ffffff"/>')
    w(f'<text x="{margin}" y="22" font-size="16" font-weight="bold" fill="#1a1a1a">'
      "protojit’s decode speed ÷ each peer’s, on the 13 public payloads</text>")
    w(f'<text x="{margin}" y="38" fill="#555555">above 1× protojit is faster; '
      "each panel has its own scale</text>")
    # Payload labels.
    for i, name in enumerate(rows):
        if name is None:
            continue
        y = top + i * row_h + row_h / 2 + 4
        weight = ' font-weight="bold"' if name == "geomean" else ""
        label = "geometric mean" if name == "geomean" else name
        w(f'<text x="{margin + label_w - 8}" y="{y:.1f}" text-anchor="end" fill="#1a1a1a"{weight}>'
          f"{escape(label)}</text>")
    sep_y = top + len(PUBLIC) * row_h + row_h / 2
    w(f'<line x1="{margin}" x2="{width - margin}" y1="{sep_y}" y2="{sep_y}" stroke="#cccccc"/>')
    for k, p in enumerate(panels):
        x0 = margin + label_w + k * (panel_w + gap)
        plot_w = panel_w - 44  # room for the value labels
        top_v = nice_max(max(max(hi for _, _, hi in p["values"].values()), p["geomean"], 1.0))
        sx = lambda v: x0 + v / top_v * plot_w  # noqa: E731
        w(f'<text x="{x0}" y="{title_h + 16}" font-size="14" font-weight="bold" fill="{p["colour"]}">'
          f'{escape(p["title"])}</text>')
        w(f'<text x="{x0}" y="{title_h + 31}" fill="#555555">{escape(p["subtitle"])}</text>')
        for t in ticks(top_v):
            x = sx(t)
            w(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" stroke="#e3e3e3"/>')
            w(f'<text x="{x:.1f}" y="{top + plot_h + 15}" text-anchor="middle" fill="#555555" '
              f'font-size="11">{fmt_tick(t)}</text>')
        # Parity (1×): dashed, drawn over the grid; labelled by the footer, not a tick.
        w(f'<line x1="{sx(1):.1f}" x2="{sx(1):.1f}" y1="{top}" y2="{top + plot_h}" stroke="#333333" '
          'stroke-dasharray="3,2"/>')
        for i, name in enumerate(rows):
            if name is None:
                continue
            yc = top + i * row_h + row_h / 2
            if name == "geomean":
                med, lo, hi = p["geomean"], None, None
                fill, opacity = p["colour"], "1"
            else:
                med, lo, hi = p["values"][name]
                fill, opacity = p["colour"], "0.75"
            w(f'<rect x="{x0}" y="{yc - bar_h / 2:.1f}" width="{sx(med) - x0:.1f}" height="{bar_h}" '
              f'fill="{fill}" fill-opacity="{opacity}"><title>{escape(str(name))}: {med:.2f}×</title></rect>')
            end = sx(med)
            if lo is not None:
                w(f'<line x1="{sx(lo):.1f}" x2="{sx(hi):.1f}" y1="{yc}" y2="{yc}" stroke="#1a1a1a" '
                  'stroke-width="1"/>')
                for v in (lo, hi):
                    w(f'<line x1="{sx(v):.1f}" x2="{sx(v):.1f}" y1="{yc - 3}" y2="{yc + 3}" '
                      'stroke="#1a1a1a" stroke-width="1"/>')
                end = max(end, sx(hi))
            weight = ' font-weight="bold"' if name == "geomean" else ""
            w(f'<text x="{end + 4:.1f}" y="{yc + 4:.1f}" fill="#1a1a1a" font-size="11"{weight}>'
              f"{med:.2f}×</text>")
    fy = top + plot_h + axis_h + 14
    for line in foot_lines:
        w(f'<text x="{margin}" y="{fy}" fill="#555555" font-size="11">{escape(line)}</text>')
        fy += 16
    w("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", default=os.path.join(ROOT, "benches/results/rounds.txt"))
    ap.add_argument("--peers", default=os.path.join(ROOT, "benches/results/peers.txt"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/ratios.svg"))
    args = ap.parse_args()

    inputs = {"rounds": args.rounds}
    if os.path.exists(args.peers):
        inputs["peers"] = args.peers
    elif args.peers != ap.get_default("peers"):
        fail(f"{args.peers}: no such file")
    parsed, runs = {}, []
    for key, path in inputs.items():
        if not os.path.exists(path):
            fail(f"{path}: no such file (save the bench's stdout there; see --help)")
        ratios, geomeans, run = parse(path)
        parsed[key] = (ratios, geomeans)
        rel = os.path.relpath(path, ROOT)
        runs.append((rel, run or "(no run: line in the file)"))

    panels = []
    for key, num, den, title, subtitle, colour in PANELS:
        if key not in parsed:
            continue
        ratios, geomeans = parsed[key]
        col = ratios.get((num, den))
        if not col:
            fail(f"{inputs[key]}: no `decode` column `{num} ÷ {den}` with `median [min–max]` cells")
        missing = [p for p in PUBLIC if p not in col]
        if missing:
            fail(f"{inputs[key]}: `{num} ÷ {den}` has no row for {', '.join(missing)}")
        values = {p: col[p] for p in PUBLIC}
        g = geomean([v[0] for v in values.values()])
        # The bench's own geometric mean of the same 13 (from unrounded medians).
        printed = [v for label, v in geomeans.get((num, den), {}).items() if label.startswith("public corpus")]
        if printed and abs(printed[0] - g) > 0.01 * printed[0]:
            fail(f"{inputs[key]}: geometric mean of `{num} ÷ {den}` over the 13 is {g:.2f}, "
                 f"the bench printed {printed[0]:.2f}")
        panels.append({"title": title, "subtitle": subtitle, "colour": colour, "values": values,
                       "geomean": printed[0] if printed else g})
        print(f"{title} ({num} ÷ {den}): geometric mean {panels[-1]['geomean']:.2f}, "
              f"min {min(v[0] for v in values.values()):.2f}", file=sys.stderr)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(svg(panels, runs))
    print(f"wrote {os.path.relpath(args.out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
