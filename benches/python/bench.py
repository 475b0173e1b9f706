#!/usr/bin/env python3
"""protojit's Python benchmark: records → Arrow against the Python peers (ptars, pybufarrow,
protarrow, google.protobuf by hand), to_dict against upb's MessageToDict, the Python call's
overhead, read_delimited over a large file, and threads=2 against threads=1.

    python benches/python/bench.py [--rounds N] [--quick] [--only SECTION[,SECTION]]

Sections: records, to_dict, overhead, delimited, threads (default: all). Prints markdown
(the command, the machine, every package's version, one table per section) on stdout and
progress on stderr. Method: benches/python/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import records as rs  # noqa: E402

SECTIONS = ["records", "to_dict", "overhead", "delimited", "threads", "from_arrow"]
perf = time.perf_counter


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def err_text(e: BaseException) -> str:
    line = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {line}"[:300]


# ---------------------------------------------------------------------------------------
# Timing: interleaved rounds, arm order rotated each round, median per arm.


@dataclass
class Arm:
    name: str
    fn: Optional[Callable[[], Any]]  # one call
    records: int = 1  # records (or payloads) one call converts
    nbytes: int = 0  # their bytes
    expect_rows: Optional[int] = None  # rows the result must have (None: not checked)
    note: str = ""
    error: Optional[str] = None
    reps: int = 1
    times: List[float] = field(default_factory=list)  # seconds per call, one per round
    cpu: List[float] = field(default_factory=list)  # process CPU seconds (all threads) per call
    cols: Optional[int] = None
    rows_ok: Optional[bool] = None


def nrows(result) -> Optional[int]:
    return getattr(result, "num_rows", None)


def ncols(result) -> Optional[int]:
    return getattr(result, "num_columns", None)


def calibrate(arm: Arm, target: float, warm: float) -> None:
    """Warm up (at least 2 calls and `warm` seconds: the JIT's background tiering and the
    compiled appenders finish here), check the result, and pick the calls per timed sample
    so that one sample takes about `target` seconds."""
    if arm.error:
        return
    try:
        t0 = perf()
        result = arm.fn()
        calls = 1
        while calls < 2 or (perf() - t0 < warm and calls < 200):
            arm.fn()
            calls += 1
        if arm.expect_rows is not None:
            arm.rows_ok = nrows(result) == arm.expect_rows
            if not arm.rows_ok:
                arm.note += f" (rows {nrows(result)}, expected {arm.expect_rows})"
        arm.cols = ncols(result)
        del result
        t1 = perf()
        arm.fn()
        one = perf() - t1
        arm.reps = max(1, int(target / max(one, 1e-9)))
    except Exception as e:  # a peer that does not convert this set
        arm.error = err_text(e)


def run_rounds(arms: List[Arm], rounds: int, target: float, warm: float) -> None:
    for a in arms:
        calibrate(a, target, warm)
    live = [a for a in arms if not a.error]
    for r in range(rounds):
        k = r % max(1, len(live))
        for a in live[k:] + live[:k]:
            if a.error:
                continue
            fn, reps = a.fn, a.reps
            gc.collect()
            gc.disable()
            try:
                c0 = time.process_time()
                t0 = perf()
                for _ in range(reps):
                    fn()
                t1 = perf()
                a.cpu.append((time.process_time() - c0) / reps)
                a.times.append((t1 - t0) / reps)
            except Exception as e:
                a.error = err_text(e)
            finally:
                gc.enable()


def med(xs: List[float]) -> float:
    return statistics.median(xs)


def cpu_text(a: Arm) -> str:
    """Process CPU time over wall time while the arm ran (1.00: one busy thread)."""
    return f"{sum(a.cpu) / sum(a.times):.2f}" if a.times and sum(a.times) > 0 else ""


def per_record(a: Arm) -> List[float]:
    return [t / a.records for t in a.times]


def ratio_text(a: Arm, ref: Arm) -> str:
    """ref speed ÷ a's speed per record, per round: median (min–max). > 1: ref is faster."""
    if a is ref:
        return "1"
    if a.name.startswith("("):  # a reference row, not an arm
        return ""
    if a.error or ref.error or not a.times or not ref.times:
        return "—"
    rs_ = [x / y for x, y in zip(per_record(a), per_record(ref))]
    m = med(rs_)
    if len(rs_) == 1:
        return f"{m:.2f}×"
    return f"{m:.2f}× ({min(rs_):.2f}–{max(rs_):.2f})"


def fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_rate(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def fmt_mb(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.2f}"


def geomean(xs: List[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


# ---------------------------------------------------------------------------------------
# The header: command, machine, versions.


def machine() -> Dict[str, str]:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.0f} GiB"
                break
    except OSError:
        pass
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"nproc": str(nproc), "cpu": cpu, "mem": mem, "os": platform.platform()}


def versions() -> Dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version() + " (" + platform.python_implementation() + ")"}
    for pkg in ["protojit", "pyarrow", "protobuf", "ptars", "pybufarrow", "protarrow", "polars", "duckdb"]:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    try:
        import protojit

        out["protojit"] = f"{protojit.__version__} ({Path(protojit._protojit.__file__).name}, {Path(protojit._protojit.__file__).stat().st_size / 2**20:.0f} MiB)"
    except Exception as e:
        out["protojit"] += f" (import failed: {err_text(e)})"
    try:
        from google.protobuf.internal import api_implementation

        out["protobuf"] += f" ({api_implementation.Type()} backend)"
    except Exception:
        pass
    try:
        import pybufarrow

        out["pybufarrow"] += f" (libbufarrow {pybufarrow.version()})"
    except Exception:
        pass
    return out


def git_tree() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(rs.REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(rs.REPO), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
        return rev + ("+ (uncommitted changes)" if dirty else "")
    except OSError:
        return "?"


def header(argv: List[str]) -> str:
    m = machine()
    v = versions()
    la = os.getloadavg()
    lines = [
        "## Python benchmark (`benches/python/bench.py`)",
        "",
        f"- command: `python benches/python/bench.py {' '.join(shlex.quote(a) for a in argv)}`",
        f"- date (UTC): {time.strftime('%Y-%m-%d %H:%M', time.gmtime())}; tree `{git_tree()}`",
        f"- machine: `nproc` {m['nproc']}, {m['cpu']}, {m['mem']}, {m['os']}; load average at start {la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f}",
        "- versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Section: records → Arrow.


def arrow_arms(schemas: rs.Schemas, s: rs.RecordSet, arr, cfg) -> List[Arm]:
    """Every arm of one record set, each on `arr` (the one pa.BinaryArray of the set)."""
    import pyarrow as pa

    n, nbytes = len(s.records), s.nbytes
    arms: List[Arm] = []

    def guarded(name, make, **kw) -> Arm:
        try:
            fn, note = make()
            return Arm(name, fn, note=note, **kw)
        except Exception as e:
            return Arm(name, None, error=err_text(e), **kw)

    full = dict(records=n, nbytes=nbytes, expect_rows=n)
    schema = schemas.protojit(s.proto)

    def pj(**opts):
        def make():
            conv = schema.converter(s.message, enums="number", **opts)
            note = f"path {conv.path}" + (f" ({conv.path_note})" if conv.path_note else "")
            return (lambda: conv.to_record_batch(arr)), note
        return make

    arms.append(guarded("protojit", pj(), **full))
    arms.append(guarded("protojit chunked, jit", pj(path="chunked", engine="jit"), **full))
    arms.append(guarded("protojit compiled, jit", pj(path="compiled", engine="jit"), **full))

    def ptars_make():
        import ptars

        desc = schemas.descriptor(s.proto, s.message)
        handler = ptars.HandlerPool([desc.file]).get_for_message(desc)
        return (lambda: handler.array_to_record_batch(arr)), ""

    arms.append(guarded("ptars", ptars_make, **full))

    def pybufarrow_make():
        import pybufarrow

        name, inc = s.proto.name, [str(s.proto.parent)]
        # Transcoder.append needs a HyperType (pybufarrow 0.6.3 raises "AppendRaw called
        # without HyperType configured" otherwise); its PGO recompile stays manual (off).
        ht = pybufarrow.HyperType(name, s.message, inc)
        tc = pybufarrow.Transcoder.from_proto_file(name, s.message, inc, hyper_type=ht)
        append, flush = tc.append, tc.flush

        def run():
            for b in arr.to_pylist():
                append(b)
            return flush()

        run._keep = (ht, tc)  # type: ignore[attr-defined]
        return run, "arr.to_pylist() + append each + flush"

    arms.append(guarded("pybufarrow", pybufarrow_make, **full))

    # The slow arms: a sample of k records (evenly spaced over the set), k chosen so that one
    # call takes about cfg.slow_target; rates are per record of the sample.
    Cls = None
    try:
        Cls = schemas.message_class(s.proto, s.message)
    except Exception as e:
        for nm in ["protarrow", "by hand"]:
            arms.append(Arm(nm, None, error=err_text(e), records=n, nbytes=nbytes))

    def sample(k: int):
        idx = [i * n // k for i in range(k)]
        sub = arr.take(pa.array(idx, pa.int64()))
        return sub, k, sum(len(s.records[i]) for i in idx)

    def slow(name, body, note):
        try:
            probe, k0, _ = sample(min(n, 8))
            body(probe)  # set-up (class caches, protarrow's converters)
            t0 = perf()
            body(probe)
            per = (perf() - t0) / k0
            k = max(1, min(n, int(cfg.slow_target / max(per, 1e-9))))
            if cfg.quick and per > cfg.slow_target * 4:
                return Arm(name, None, error=f"skipped under --quick ({fmt_time(per)} per record)", records=n, nbytes=nbytes)
            sub, k, kb = sample(k)
            sn = note + (f"; a sample of {k:,} of {n:,} records" if k < n else "")
            return Arm(name, lambda: body(sub), records=k, nbytes=kb, expect_rows=k, note=sn)
        except Exception as e:
            return Arm(name, None, error=err_text(e), records=n, nbytes=nbytes)

    if Cls is not None:
        import protarrow
        from google.protobuf import json_format

        from_string = Cls.FromString
        to_dict = json_format.MessageToDict

        def protarrow_body(a):
            return protarrow.messages_to_record_batch([from_string(b) for b in a.to_pylist()], Cls)

        def by_hand_body(a):
            dicts = [to_dict(from_string(b)) for b in a.to_pylist()]
            # pa.Table.from_pylist takes its columns from the first row only (fields absent
            # there are dropped); pa.array infers the struct type over every row.
            return pa.RecordBatch.from_struct_array(pa.array(dicts))

        arms.append(slow("protarrow", protarrow_body, "FromString each + messages_to_record_batch"))
        arms.append(slow("by hand", by_hand_body, "FromString + MessageToDict each + pa.array → RecordBatch"))

    arms.append(Arm("(arr.to_pylist())", lambda: arr.to_pylist(), note="the array → list[bytes] step of pybufarrow, protarrow and by hand; not an arm", **dict(records=n, nbytes=nbytes)))
    return arms


def section_records(schemas, cfg) -> str:
    import pyarrow as pa

    out = [
        "### Records → Arrow, per core",
        "",
        f"Median of {cfg.rounds} interleaved rounds (arm order rotated each round), the same "
        "`pa.BinaryArray` for every arm; every arm on one thread; protojit arms with "
        "`enums=\"number\"` (int32, as ptars and protarrow); \"protojit ÷ arm\" is protojit's "
        "(default converter) speed over the arm's, per record, per round: median (min–max).",
        "",
        "| record set | records | bytes/record | arm | time per call | records/s | MB/s | protojit ÷ arm | CPU ÷ wall | cols | note |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name in cfg.sets:
        log(f"records: {name}")
        try:
            s = rs.record_set(schemas, name, cfg.quick)
        except Exception as e:
            out.append(f"| {name} | | | | | | | | | | failed to make: {err_text(e)} |")
            continue
        arr = pa.array(s.records, pa.binary())
        arms = arrow_arms(schemas, s, arr, cfg)
        run_rounds(arms, cfg.rounds, cfg.target, cfg.warm)
        ref = arms[0]
        label = s.label + (" (google_message1 ×%s)" % f"{len(s.records):,}" if name == "gm1" else "")
        for a in arms:
            if a.error or not a.times:
                out.append(f"| {label} | {len(s.records):,} | {s.nbytes / len(s.records):.0f} | {a.name} | — | — | — | — | | | {a.error or 'no time'} |")
                continue
            t = med(a.times)
            out.append(
                f"| {label} | {len(s.records):,} | {s.nbytes / len(s.records):.0f} | {a.name} | {fmt_time(t)} | "
                f"{fmt_rate(a.records / t)} | {fmt_mb(a.nbytes / t / 1e6)} | {ratio_text(a, ref)} | {cpu_text(a)} | {a.cols if a.cols is not None else ''} | {a.note.strip()} |"
            )
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Section: to_dict against upb.


def section_to_dict(schemas, cfg) -> str:
    from google.protobuf import json_format

    out = [
        "### `Decoder.to_dict` against `FromString` + `json_format.MessageToDict` (upb), the 13 public payloads",
        "",
        f"Median of {cfg.rounds} interleaved rounds per payload; protojit's default decoder "
        "(`schema.decoder(msg)`, engine auto, warmed); \"protojit ÷ upb\" is the speed ratio per "
        "round, median (min–max); \"same dict\": `to_dict(b) == MessageToDict(FromString(b))`.",
        "",
        "| payload | bytes | protojit to_dict | upb FromString + MessageToDict | upb FromString alone | protojit ÷ upb | same dict |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    ratios = []
    to_dict = json_format.MessageToDict
    for proto, message, fname in rs.public13():
        short = rs.PAYLOAD_NAMES[fname]
        log(f"to_dict: {short}")
        p = schemas.corpus / proto
        b = (schemas.corpus / fname).read_bytes()
        try:
            dec = schemas.protojit(p).decoder(message)
            Cls = schemas.message_class(p, message)
        except Exception as e:
            out.append(f"| {short} | {len(b):,} | — | — | — | — | set-up failed: {err_text(e)} |")
            continue
        pj_dict = lambda: dec.to_dict(b)  # noqa: E731
        fs = Cls.FromString
        upb_dict = lambda: to_dict(fs(b))  # noqa: E731
        upb_parse = lambda: fs(b)  # noqa: E731
        arms = [Arm("protojit", pj_dict, nbytes=len(b)), Arm("upb", upb_dict, nbytes=len(b)), Arm("parse", upb_parse, nbytes=len(b))]
        run_rounds(arms, cfg.rounds, cfg.target, cfg.warm)
        try:
            same = "yes" if dec.to_dict(b) == to_dict(fs(b)) else "**no**"
        except Exception as e:
            same = err_text(e)
        cells = [fmt_time(med(a.times)) if a.times else (a.error or "—") for a in arms]
        if arms[0].times and arms[1].times:
            r = [u / p_ for p_, u in zip(arms[0].times, arms[1].times)]
            ratios.append(med(r))
            rt = f"{med(r):.2f}× ({min(r):.2f}–{max(r):.2f})"
        else:
            rt = "—"
        out.append(f"| {short} | {len(b):,} | {cells[0]} | {cells[1]} | {cells[2]} | {rt} | {same} |")
    if ratios:
        out.append(f"| **geomean** ({len(ratios)}) | | | | | **{geomean(ratios):.2f}×** (min {min(ratios):.2f}×) | |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Section: the Python call's overhead.

RUST_LINE = re.compile(r"^(\S+)\s+(\S+)\s+median ([\d.]+) s .*?;\s*([\d.]+) M records/s, (\d+) MB/s per core")


def read_rust_rounds(path: Optional[str]) -> Dict[tuple, float]:
    """records/s per (set, arm) from the output of benches/ptars/rounds.sh."""
    out = {}
    if not path:
        return out
    for line in open(path):
        m = RUST_LINE.match(line.strip())
        if m:
            out[(m.group(1), m.group(2))] = float(m.group(4)) * 1e6
    return out


def section_overhead(schemas, cfg) -> str:
    import pyarrow as pa

    out = ["### The Python call's overhead", ""]
    s = rs.gm1(schemas, 1)
    b = s.records[0]
    schema = schemas.protojit(s.proto)
    conv = schema.converter(s.message, enums="number")
    conv_c = schema.converter(s.message, enums="number", path="compiled", engine="jit")
    dec = schema.decoder(s.message)
    empty = pa.array([], pa.binary())
    one = pa.array([b], pa.binary())
    arms = [
        Arm("`conv.path` (a property: the floor of a PyO3 call)", lambda: conv.path),
        Arm("`conv.to_record_batch(empty array)`", lambda: conv.to_record_batch(empty)),
        Arm("`conv.to_record_batch(1-record array)`", lambda: conv.to_record_batch(one)),
        Arm("… compiled path, jit", lambda: conv_c.to_record_batch(one)),
        Arm("`conv.to_record_batch([b])` (a list)", lambda: conv.to_record_batch([b])),
        Arm("`dec.to_dict(b)`", lambda: dec.to_dict(b)),
        Arm("`pa.array([b], pa.binary())` (for scale)", lambda: pa.array([b], pa.binary())),
    ]
    try:
        # The pyarrow side of the hand-over alone: the empty 41-column batch protojit returns,
        # exported and imported again through the Arrow C data interface (`__arrow_c_array__`).
        empty_batch = conv.to_record_batch(empty)

        class Exported:
            def __arrow_c_array__(self, requested_schema=None):
                return empty_batch.__arrow_c_array__(requested_schema)

        exported = Exported()
        arms.append(Arm("`pa.record_batch(...)` of that empty batch via `__arrow_c_array__` (pyarrow's import alone)", lambda: pa.record_batch(exported)))
    except Exception as e:
        arms.append(Arm("pyarrow C data import", None, error=err_text(e)))
    try:
        import ptars

        desc = schemas.descriptor(s.proto, s.message)
        h = ptars.HandlerPool([desc.file]).get_for_message(desc)
        arms.append(Arm("ptars `array_to_record_batch(1-record array)`", lambda: h.array_to_record_batch(one)))
        arms.append(Arm("ptars `array_to_record_batch(empty array)`", lambda: h.array_to_record_batch(empty)))
    except Exception as e:
        arms.append(Arm("ptars", None, error=err_text(e)))
    log("overhead: per call")
    run_rounds(arms, cfg.rounds, cfg.target, cfg.warm)
    out += [
        f"Per call, gm1 (google_message1, 228 bytes), median of {cfg.rounds} interleaved rounds:",
        "",
        "| call | time per call |",
        "|---|---:|",
    ]
    for a in arms:
        out.append(f"| {a.name} | {fmt_time(med(a.times)) if a.times else (a.error or '—')} |")

    rust = read_rust_rounds(cfg.rust_rounds)
    out += [
        "",
        "Records/s of the Rust bench's arms from Python (`bash benches/ptars/rounds.sh`: `protojit` = "
        "chunked path, `compiled` = compiled appenders; both `enums` number, engine jit): "
        "the same record sets, converted by `Converter.to_record_batch` on a `pa.BinaryArray`"
        + (f"; Rust figures from `{cfg.rust_rounds}`." if rust else "; put the Rust figures beside them (or pass `--rust-rounds FILE` with rounds.sh's output)."),
        "",
        "| record set | records | arm | Python time per call | Python records/s | MB/s | Rust records/s | Python ÷ Rust speed | overhead per call |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ["gm1", "telemetry", "osm_ways", "mvt_features"]:
        log(f"overhead: {name}")
        rset = rs.record_set(schemas, name, cfg.quick)
        arr = pa.array(rset.records, pa.binary())
        sch = schemas.protojit(rset.proto)
        n = len(rset.records)
        arms = []
        for arm, opts in [("protojit", dict(path="chunked")), ("compiled", dict(path="compiled"))]:
            try:
                c = sch.converter(rset.message, enums="number", engine="jit", **opts)
                arms.append(Arm(arm, (lambda c=c: c.to_record_batch(arr)), records=n, nbytes=rset.nbytes, expect_rows=n, note=c.path))
            except Exception as e:
                arms.append(Arm(arm, None, error=err_text(e), records=n))
        run_rounds(arms, cfg.rounds, cfg.target, cfg.warm)
        for a in arms:
            if not a.times:
                out.append(f"| {name} | {n:,} | {a.name} | {a.error or '—'} | | | | | |")
                continue
            t = med(a.times)
            r = rust.get((name, a.name))
            rust_cells = "| | "
            if r:
                # rounds.sh converts 10,000 gm1 / telemetry records and the whole ways / features
                # sets; the per-call overhead compares like sizes only.
                same_size = not cfg.quick
                over = fmt_time(t - n / r) if same_size else "(sizes differ under --quick)"
                rust_cells = f"| {fmt_rate(r)} | {(n / t) / r:.2f}× | {over}"
            else:
                rust_cells = "| — | — | —"
            out.append(f"| {name} | {n:,} | {a.name} ({a.note}) | {fmt_time(t)} | {fmt_rate(n / t)} | {fmt_mb(a.nbytes / t / 1e6)} {rust_cells} |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Section: read_delimited over a large file (in child processes, for their peak RSS).


def write_delimited(path: Path, payload: bytes, target_bytes: int) -> int:
    def varint(v: int) -> bytes:
        o = bytearray()
        while v >= 0x80:
            o.append((v & 0x7F) | 0x80)
            v >>= 7
        o.append(v)
        return bytes(o)

    rec = varint(len(payload)) + payload
    count = max(1, target_bytes // len(rec))
    chunk_n = 65536
    chunk = rec * chunk_n
    written = 0
    with open(path, "wb") as f:
        while written + chunk_n <= count:
            f.write(chunk)
            written += chunk_n
        f.write(rec * (count - written))
    return count


def peak_rss_kib() -> int:
    """This process's peak RSS: VmHWM of /proc/self/status (of this process's own address
    space). Not ru_maxrss: Linux carries ru_maxrss across execve, so a child started by a
    large parent reports the parent's RSS."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child_delimited(args) -> None:
    """Run in a child process: stream the file, print one JSON line."""
    path = args.child_delimited
    setup_rss = None
    if args.child_mode == "floor":
        t0 = perf()
        buf = bytearray(1 << 20)
        total = 0
        with open(path, "rb", buffering=0) as f:
            while True:
                k = f.readinto(buf)
                if not k:
                    break
                total += k
        dt = perf() - t0
        rows = None
        batches = None
    else:
        import protojit  # noqa: F401
        import pyarrow  # noqa: F401  (loaded before the set-up figure, as a user's process has it)

        corpus = Path(args.corpus)
        schema = protojit.Schema.from_proto(str(corpus / "benchmark_message1_proto3.proto"), include=str(corpus))
        conv = schema.converter("benchmarks.proto3.GoogleMessage1", enums="number")
        setup_rss = peak_rss_kib()
        t0 = perf()
        rows = batches = 0
        for batch in conv.read_delimited(path, batch_size=args.batch_size):
            rows += batch.num_rows
            batches += 1
        del batch
        dt = perf() - t0
    print(json.dumps({
        "seconds": dt,
        "rows": rows,
        "batches": batches,
        "setup_rss_kib": setup_rss,
        "peak_rss_kib": peak_rss_kib(),
    }))


def section_delimited(schemas, cfg) -> str:
    payload = (schemas.corpus / "google_message1_proto3.payload0.bin").read_bytes()
    target = int(cfg.delimited_gb * 1e9)
    made = False
    if cfg.delimited_file:
        path = Path(cfg.delimited_file)
        count = None
    else:
        d = Path(cfg.delimited_dir or tempfile.gettempdir())
        path = d / f"protojit-bench-gm1-{target}.delimited"
        log(f"delimited: writing {target / 1e9:.2f} GB of gm1 records to {path}")
        count = write_delimited(path, payload, target)
        made = True
    size = path.stat().st_size
    try:
        runs: Dict[str, List[dict]] = {"floor": [], "protojit": []}
        base = [sys.executable, str(Path(__file__).resolve()), "--corpus", str(schemas.corpus),
                "--child-delimited", str(path), "--batch-size", str(cfg.batch_size)]
        subprocess.run(base + ["--child-mode", "floor"], check=True, capture_output=True)  # page cache
        for r in range(cfg.delimited_rounds):
            order = ["floor", "protojit"] if r % 2 == 0 else ["protojit", "floor"]
            for mode in order:
                log(f"delimited: round {r + 1}, {mode}")
                p = subprocess.run(base + ["--child-mode", mode], capture_output=True, text=True)
                if p.returncode != 0:
                    return f"### `read_delimited`\n\nfailed ({mode}): {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}"
                runs[mode].append(json.loads(p.stdout.strip().splitlines()[-1]))
    finally:
        if made and not cfg.keep_delimited:
            path.unlink(missing_ok=True)
    pj = runs["protojit"]
    fl = runs["floor"]
    t = med([x["seconds"] for x in pj])
    tf = med([x["seconds"] for x in fl])
    rows = pj[0]["rows"]
    ok = "" if count is None or rows == count else f" (**expected {count:,}**)"
    setup = max(x["setup_rss_kib"] for x in pj) / 1024
    peak = max(x["peak_rss_kib"] for x in pj) / 1024
    peak_f = max(x["peak_rss_kib"] for x in fl) / 1024
    return "\n".join([
        "### `Converter.read_delimited` over a large file",
        "",
        f"{size / 1e9:.2f} GB of varint-delimited google_message1 records (228 bytes each), "
        f"`conv.read_delimited(path, batch_size={cfg.batch_size})` on the default converter "
        f"(`enums=\"number\"`), each batch's rows counted and the batch dropped; each run in its own child process "
        f"(its VmHWM is the peak RSS: the whole process, Python and pyarrow included); median of {cfg.delimited_rounds} run{'s' if cfg.delimited_rounds > 1 else ''}, alternated with the read floor "
        "(the same file read in 1 MiB blocks in Python, nothing decoded). The file is in the page cache.",
        "",
        "| run | time | records/s | MB/s | rows | batches | peak RSS after set-up | peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        f"| read_delimited | {t:.2f} s ({min(x['seconds'] for x in pj):.2f}–{max(x['seconds'] for x in pj):.2f}) | {fmt_rate(rows / t)} | {fmt_mb(size / t / 1e6)} | {rows:,}{ok} | {pj[0]['batches']:,} | {setup:.0f} MiB | {peak:.0f} MiB |",
        f"| read floor | {fmt_time(tf)} | | {fmt_mb(size / tf / 1e6)} | | | | {peak_f:.0f} MiB |",
    ])


# ---------------------------------------------------------------------------------------
# Section: threads=2 against threads=1.


def section_threads(schemas, cfg) -> str:
    import pyarrow as pa

    n = cfg.threads_records
    s = rs.gm1(schemas, n)
    arr = pa.array(s.records, pa.binary())
    sch = schemas.protojit(s.proto)
    arms = []
    for label, opts in [("default path", {}), ("compiled, jit", dict(path="compiled", engine="jit"))]:
        for th in [1, 2]:
            try:
                c = sch.converter(s.message, enums="number", threads=th, **opts)
                arms.append(Arm(f"{label}, threads={th}", (lambda c=c: c.to_record_batch(arr)), records=n, nbytes=s.nbytes, expect_rows=n, note=c.path))
            except Exception as e:
                arms.append(Arm(f"{label}, threads={th}", None, error=err_text(e), records=n, nbytes=s.nbytes))
    log(f"threads: {n:,} gm1 records")
    run_rounds(arms, cfg.rounds, cfg.target, cfg.warm)
    out = [
        f"### `threads=2` against `threads=1`, {n:,} google_message1 records in one array",
        "",
        f"Median of {cfg.rounds} interleaved rounds; `nproc` {machine()['nproc']}; speed-up = threads=1 time ÷ threads=2 time per round, median (min–max).",
        "",
        "| converter | time per call | records/s | MB/s | speed-up | CPU ÷ wall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for i, a in enumerate(arms):
        if not a.times:
            out.append(f"| {a.name} | {a.error or '—'} | | | | |")
            continue
        t = med(a.times)
        sp = ""
        if i % 2 == 1 and arms[i - 1].times:
            sp = ratio_text(arms[i - 1], a)
        out.append(f"| {a.name} (path {a.note}) | {fmt_time(t)} | {fmt_rate(n / t)} | {fmt_mb(s.nbytes / t / 1e6)} | {sp} | {cpu_text(a)} |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Section: the way back, a RecordBatch into protobuf messages, against ptars.


def section_from_arrow(schemas, cfg) -> str:
    import pyarrow as pa

    out = [
        "### RecordBatch → protobuf messages, per core",
        "",
        f"Median of {cfg.rounds} interleaved rounds; each tool encodes its own batch of the same records "
        "(protojit's converter with `enums=\"number\"`, ptars' `array_to_record_batch`), both into a "
        "`pa.BinaryArray` of canonical messages: `Converter.from_record_batch` against ptars' "
        "`record_batch_to_array`. \"protojit ÷ arm\" as above.",
        "",
        "| record set | records | arm | time per call | records/s | protojit ÷ arm | note |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for name in cfg.sets:
        log(f"from_arrow: {name}")
        try:
            s = rs.record_set(schemas, name, cfg.quick)
        except Exception as e:
            out.append(f"| {name} | | | | | | failed to make: {err_text(e)} |")
            continue
        arr = pa.array(s.records, pa.binary())
        n = len(s.records)
        conv = schemas.protojit(s.proto).converter(s.message, enums="number")
        batch = conv.to_record_batch(arr)
        arms = [Arm("protojit", lambda: conv.from_record_batch(batch), records=n, nbytes=s.nbytes)]
        try:
            import ptars

            desc = schemas.descriptor(s.proto, s.message)
            handler = ptars.HandlerPool([desc.file]).get_for_message(desc)
            theirs = handler.array_to_record_batch(arr)
            arms.append(Arm("ptars", lambda: handler.record_batch_to_array(theirs), records=n, nbytes=s.nbytes))
        except Exception as e:
            arms.append(Arm("ptars", None, records=n, error=err_text(e)))
        # Both give one message per row (checked once, before timing).
        for a in arms:
            if not a.error and len(a.fn()) != n:
                a.error = f"{len(a.fn())} messages, expected {n}"
        run_rounds(arms, cfg.rounds, cfg.target, cfg.warm)
        ref = arms[0]
        for a in arms:
            if a.error or not a.times:
                out.append(f"| {s.label} | {n:,} | {a.name} | — | — | — | {a.error or 'no time'} |")
                continue
            t = med(a.times)
            out.append(f"| {s.label} | {n:,} | {a.name} | {fmt_time(t)} | {fmt_rate(n / t)} | {ratio_text(a, ref)} | |")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 7; 2 with --quick)")
    ap.add_argument("--quick", action="store_true", help="everything tiny: a smoke test, not a measurement")
    ap.add_argument("--only", action="append", help=f"section(s) to run, comma-separated or repeated: {', '.join(SECTIONS)}")
    ap.add_argument("--sets", help=f"record sets of the records section, comma-separated (default: {','.join(rs.RECORD_SETS)})")
    ap.add_argument("--corpus", default=str(rs.default_corpus_dir()), help="the shared corpus (default: <repo>/../shared/corpus)")
    ap.add_argument("--target-ms", type=float, help="time of one timed sample per arm (default 100; 2 with --quick)")
    ap.add_argument("--slow-target-ms", type=float, help="time of one call of the sampled arms, protarrow and by hand (default 250; 5 with --quick)")
    ap.add_argument("--delimited-gb", type=float, help="size of the delimited file (default 2; 0.01 with --quick)")
    ap.add_argument("--delimited-dir", help="where to write it (default: the temp directory)")
    ap.add_argument("--delimited-file", help="stream this existing file of delimited gm1 records instead")
    ap.add_argument("--delimited-rounds", type=int, help="read_delimited runs (default 3; 1 with --quick)")
    ap.add_argument("--keep-delimited", action="store_true", help="keep the generated file")
    ap.add_argument("--batch-size", type=int, default=65536)
    ap.add_argument("--threads-records", type=int, help="gm1 records of the threads section (default 100000; 20000 with --quick)")
    ap.add_argument("--rust-rounds", help="the saved output of `bash benches/ptars/rounds.sh` to put beside the Python figures")
    ap.add_argument("--child-delimited", help=argparse.SUPPRESS)
    ap.add_argument("--child-mode", default="protojit", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child_delimited:
        child_delimited(args)
        return 0

    q = args.quick
    args.rounds = args.rounds or (2 if q else 7)
    args.target = (args.target_ms or (2 if q else 100)) / 1e3
    args.slow_target = (args.slow_target_ms or (5 if q else 250)) / 1e3
    args.warm = 0.01 if q else 0.5
    args.delimited_gb = args.delimited_gb if args.delimited_gb is not None else (0.01 if q else 2.0)
    args.delimited_rounds = args.delimited_rounds or (1 if q else 3)
    args.threads_records = args.threads_records or (20_000 if q else 100_000)
    args.sets = args.sets.split(",") if args.sets else rs.RECORD_SETS
    only = [x.strip() for o in (args.only or []) for x in o.split(",") if x.strip()] or SECTIONS
    bad = [x for x in only if x not in SECTIONS] + [x for x in args.sets if x not in rs.RECORD_SETS]
    if bad:
        ap.error(f"unknown section or record set: {', '.join(bad)} (sections: {', '.join(SECTIONS)}; sets: {', '.join(rs.RECORD_SETS)})")

    try:
        import protojit  # noqa: F401
    except ImportError as e:
        print(f"protojit does not import ({e}): build it first (README.md in this folder)", file=sys.stderr)
        return 2
    corpus = Path(args.corpus)
    if not (corpus / "README.md").is_file():
        print(f"no shared corpus at {corpus} (pass --corpus DIR)", file=sys.stderr)
        return 2

    t_start = perf()
    print(header(sys.argv[1:]))
    if q:
        print("\n**--quick: a smoke test; the figures are not measurements.**")
    sys.stdout.flush()
    schemas = rs.Schemas(corpus)
    runners = {
        "records": section_records,
        "to_dict": section_to_dict,
        "overhead": section_overhead,
        "delimited": section_delimited,
        "threads": section_threads,
        "from_arrow": section_from_arrow,
    }
    for name in SECTIONS:
        if name not in only:
            continue
        t0 = perf()
        try:
            text = runners[name](schemas, args)
        except Exception as e:
            import traceback

            traceback.print_exc()
            text = f"### {name}\n\nfailed: {err_text(e)}"
        print("\n" + text + f"\n\n_({name}: {perf() - t0:.0f} s)_")
        sys.stdout.flush()
    la = os.getloadavg()
    print(f"\nLoad average at the end {la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f}; total {perf() - t_start:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
