#!/usr/bin/env python3
"""Compare unifuse's fused epilogue with PyTorch on a CUDA GPU.

Loads the CUDA build of libunifuse through ctypes and calls
uf_epilogue_forward / _backward on torch tensors x [rows, cols] (on
torch's current stream) in two configurations of issue 5, b a [cols] bias:

  bias_act_scale         y = relu(x + b) * s, s a scalar. Issue 5 states
                         relu(x + b1) * s + b2 with b2 a second per-channel
                         vector; uf_epilogue_desc has one bias, so "+ b2"
                         cannot be expressed (a FULL residual would read a
                         whole tensor instead of a vector): both sides are
                         compared without b2.
  bias_dropout_residual  y = dropout(x + b, p) + r, r like x (the tail of a
                         transformer block).

For each dtype and cols it

  * checks unifuse against float64 torch with the tolerances of
    tests/harness.c (column sums: plus the recursive-summation bound of
    th_compare_sum): with dropout off, y, dx, dbias and dresidual against
    the composition and its autograd gradients; with dropout on,
    structurally: the mask read from dx (dx != 0 where dy != 0) explains y
    (kept: (x + b) / (1 - p) + r, dropped: r), kept dx are dy / (1 - p),
    dresidual is dy, dbias the column sums of dx, and the dropped fraction
    is within 6 standard deviations of p;
  * times, with CUDA events (median of --iters calls after warm-up),
    unifuse, the eager composition and torch.compile of it: forward (no
    autograd), backward (autograd for x, b and r, graph retained) and
    forward + backward, next to torch's device-to-device copy;
  * writes a JSON file and a PNG bar chart, and prints a table.

Effective bytes as in bench/bench_epilogue.c: forward x read, y written, r
read where present, b read once; backward x and dy read, dx written,
dresidual written where there is a residual, b read and dbias written
once. PyTorch's saved dropout mask is not counted.

The helpers after the binding (timing records, torch's side, output) are
shared with compare_torch_norm.py.

Exit status: 0 when every check passes, 1 otherwise. A failing
torch.compile is recorded, not fatal.
"""

import argparse
import ctypes
import datetime
import json
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import (ALIASES, DTYPES, MIB, UF_BACKEND_CUDA,  # noqa: E402
                           compare, log, measure_copy)
from compare_torch_activation import (ActivationDesc, DropoutDesc,  # noqa: E402
                                      UnifuseActivation, event_timer, kernel_scale)

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --help and py_compile work without it
    torch = F = None

UF_OPERAND_NONE, UF_OPERAND_SCALAR, UF_OPERAND_ROW, UF_OPERAND_FULL = 0, 1, 2, 3
# The mask's seed and offset do not change the work done: kept fixed.
SEED, OFFSET = 20261129, 0
# s of bias_act_scale: exact in every dtype, so the check sees no rounding of it.
SCALE = 0.5
OPS = ("forward", "backward", "fwd+bwd")
IMPLS = ("unifuse", "eager", "compile")
# fp32's unit roundoff, for th_compare_sum's bound on sums.
U32 = 2.0 ** -24
TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
# name -> (activation, uf scale operand, has dropout, has residual)
CONFIGS = {
    "bias_act_scale": ("relu", UF_OPERAND_SCALAR, False, False),
    "bias_dropout_residual": ("identity", UF_OPERAND_NONE, True, True),
}
# Where tensors live: "cuda" here; a test may point it at the CPU to run
# the checks against the OpenMP build, whose pointers are host memory.
DEVICE = "cuda"


class EpilogueDesc(ctypes.Structure):
    """uf_epilogue_desc of src/unifuse/epilogue.h (C enums are int)."""

    _fields_ = [
        ("dtype", ctypes.c_int),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("bias", ctypes.c_int),
        ("act", ActivationDesc),
        ("scale", ctypes.c_int),
        ("scale_value", ctypes.c_double),
        ("residual", ctypes.c_int),
    ]


class UnifuseEpilogue(UnifuseActivation):
    """The activation binding plus the epilogue calls."""

    def __init__(self, path):
        super().__init__(path)
        # 80 bytes on x86-64: a mismatch means the binding left the header.
        if ctypes.sizeof(EpilogueDesc) != 80 and ctypes.sizeof(ctypes.c_void_p) == 8:
            raise RuntimeError("EpilogueDesc layout does not match uf_epilogue_desc")
        vp, c_int = ctypes.c_void_p, ctypes.c_int
        desc_p, drop_p = ctypes.POINTER(EpilogueDesc), ctypes.POINTER(DropoutDesc)
        self.lib.uf_epilogue_forward.argtypes = [desc_p, drop_p] + [vp] * 6
        self.lib.uf_epilogue_backward.argtypes = [desc_p, drop_p] + [vp] * 9
        self.lib.uf_epilogue_forward.restype = c_int
        self.lib.uf_epilogue_backward.restype = c_int

    def epilogue_desc(self, name, dtype, rows, cols):
        act, scale, _, residual = CONFIGS[name]
        return EpilogueDesc(dtype, rows, cols, UF_OPERAND_ROW,
                            self.lib.uf_activation_default(self.kinds[act]), scale, SCALE,
                            UF_OPERAND_FULL if residual else UF_OPERAND_NONE)

    def passes(self, name, p, dtype, t, stream):
        """(forward, backward) callables on the tensors of t (see
        make_tensors); dbias always, dresidual where there is a residual.
        The descriptors live on in the closures."""
        x = t["x"]
        desc = self.epilogue_desc(name, dtype, x.shape[0], x.shape[1])
        drop = DropoutDesc(p, SEED, OFFSET) if p else None
        dref, pref = ctypes.byref(desc), ctypes.byref(drop) if drop else None

        def ptr(key):
            return t[key].data_ptr() if t.get(key) is not None else None

        return (self.call("uf_epilogue_forward", dref, pref, ptr("x"), ptr("b"), None, ptr("r"),
                          ptr("y"), stream),
                self.call("uf_epilogue_backward", dref, pref, ptr("x"), ptr("b"), None, ptr("dy"),
                          ptr("dx"), ptr("db"), None, ptr("dr"), stream))


# --------------------------------------------------------------------------
# Shared with compare_torch_norm.py: inputs, sums, timing records


def sync():
    """Waits for the GPU (the OpenMP build has finished when a call returns)."""
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def torch_dtype(dt):
    return getattr(torch, TORCH_DTYPES[dt])


def uniform(gen, shape, lo, hi, tdt):
    """Uniform values in [lo, hi) rounded to tdt, on DEVICE."""
    return (torch.rand(shape, device=DEVICE, generator=gen) * (hi - lo) + lo).to(tdt)


def row_chunks(rows, cols, limit=1 << 24):
    """(first, end) row blocks of about `limit` elements, so the float64
    copies of a check stay a few hundred MiB."""
    step = max(1, limit // cols)
    return [(i, min(rows, i + step)) for i in range(0, rows, step)]


def compare_sum(got, want, abs_sum, terms, dt):
    """As th_compare_sum: (max abs error, sums outside atol + rtol |want| +
    terms * u * abs_sum), u fp32's unit roundoff, whatever the order."""
    _, rtol, atol = DTYPES[dt]
    err = (got.double() - want).abs()
    bad = ~(err <= atol + rtol * want.abs() + terms * U32 * abs_sum)
    return float(err.max()) if err.numel() else 0.0, int(bad.sum())


class Checks:
    """Worst error and bad count per named quantity of one case."""

    def __init__(self):
        self.items = {}

    def add(self, key, res):
        cur = self.items.setdefault(key, [0.0, 0])
        cur[0] = max(cur[0], res[0])
        cur[1] += res[1]

    def result(self):
        out = {k: {"max_abs_err": v[0], "bad": v[1], "ok": v[1] == 0}
               for k, v in self.items.items()}
        out["ok"] = all(v["ok"] for v in out.values())
        return out

    def summary(self):
        return "  ".join("%s %.2e (%d bad)" % (k, v[0], v[1]) for k, v in self.items.items())


class Recorder:
    """Times callables into JSON entries, one per implementation and pass;
    a failure is recorded in the entry and in `errors`, not raised."""

    def __init__(self, timer, quick, copy_gbps):
        self.timer, self.quick, self.copy_gbps = timer, quick, copy_gbps
        self.results, self.errors = [], []

    def error(self, what, e):
        self.errors.append({"what": what, "error": repr(e)})
        log("error: %s: %r" % (what, e))

    def record(self, row, impl, op, fn, nbytes, fields, tag):
        entry = dict(fields, op=op, impl=impl, bytes=nbytes, ms=None, gbps=None,
                     pct_of_copy=None)
        try:
            ms = self.timer(fn, self.quick)
            gbps = nbytes / (ms * 1e6)
            entry.update(ms=ms, gbps=gbps,
                         pct_of_copy=100 * gbps / self.copy_gbps if self.copy_gbps else None)
        except Exception as e:  # noqa: BLE001 - e.g. torch.compile failing
            entry["error"] = repr(e)
            self.error("%s %s %s" % (impl, op, tag), e)
        self.results.append(entry)
        row[(impl, op)] = entry

    def unifuse(self, row, fwd, bwd, nbytes, fields, tag):
        def both():
            fwd()
            bwd()

        for op, fn in (("forward", fwd), ("backward", bwd), ("fwd+bwd", both)):
            self.record(row, "unifuse", op, fn, nbytes[op], fields, tag)

    def torch_impls(self, row, fn, inputs, grad_of, dy, nbytes, fields, tag):
        """Times fn(*inputs) eager and compiled: forward without autograd;
        backward, autograd for inputs[i], i in grad_of, on a retained graph;
        forward + backward."""
        for impl in IMPLS[1:]:
            f = fn
            if impl == "compile":
                try:
                    f = torch.compile(fn, dynamic=False)
                except Exception as e:  # noqa: BLE001 - torch < 2 has none
                    self.error("torch.compile " + tag, e)
                    continue

            def fwd_only(f=f):
                with torch.no_grad():
                    f(*inputs)

            def graph(f=f):
                args = list(inputs)
                for i in grad_of:
                    args[i] = args[i].detach().requires_grad_(True)
                return [args[i] for i in grad_of], f(*args)

            def fwd_bwd(graph=graph):
                leaves, out = graph()
                torch.autograd.grad(out, leaves, dy)

            self.record(row, impl, "forward", fwd_only, nbytes["forward"], fields, tag)
            try:
                leaves, out = graph()
            except Exception as e:  # noqa: BLE001
                self.error("%s backward graph %s" % (impl, tag), e)
                continue

            def bwd_only(leaves=leaves, out=out):
                torch.autograd.grad(out, leaves, dy, retain_graph=True)

            self.record(row, impl, "backward", bwd_only, nbytes["backward"], fields, tag)
            self.record(row, impl, "fwd+bwd", fwd_bwd, nbytes["fwd+bwd"], fields, tag)
            del leaves, out


def print_rows(row, label):
    """One line per pass: GB/s of each implementation, unifuse's % of copy,
    and how many times longer eager and compile take than unifuse."""
    for op in OPS:
        cells = []
        for impl in IMPLS:
            e = row.get((impl, op))
            cells.append("%9.1f" % e["gbps"] if e and e["gbps"] else "%9s" % "-")
        u = row.get(("unifuse", op))
        ratios = []
        for impl in IMPLS[1:]:
            t = row.get((impl, op))
            ok = u and t and u["ms"] and t["ms"]
            ratios.append("%7s" % ("%.2fx" % (t["ms"] / u["ms"]) if ok else "-"))
        log("%-8s %-36s %s %7s %s" % (
            op, label, " ".join(cells),
            "%6.1f%%" % u["pct_of_copy"] if u and u["pct_of_copy"] else "-", " ".join(ratios)))


def table_header(what):
    log("%-8s %-36s %9s %9s %9s %7s %7s %7s" % (
        "op", what, "unifuse", "eager", "compile", "%copy", "vs eag", "vs cmp"))


def setup_torch(path, cls):
    """(binding, device info, triton version) after checking that `path`
    is a CUDA build and letting torch.compile specialise as often as the
    sweep needs; None with a message when it cannot run."""
    if torch is None:
        log("PyTorch is not installed")
        return None
    if not torch.cuda.is_available():
        log("no CUDA device visible to torch")
        return None
    uf = cls(os.path.abspath(path))
    info = uf.device_info()
    if info.backend != UF_BACKEND_CUDA:
        log("%s is the %s build, not CUDA" % (path, uf.lib.uf_backend_name(info.backend)))
        return None
    try:
        import torch._dynamo as dynamo

        for knob in ("cache_size_limit", "recompile_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, 1024)
    except Exception:  # noqa: BLE001
        pass
    try:
        import triton

        triton_version = triton.__version__
    except Exception:  # noqa: BLE001
        triton_version = None
    return uf, info, triton_version


def release_torch():
    """Drops compiled graphs and cached blocks between cases."""
    try:
        torch._dynamo.reset()
    except Exception:  # noqa: BLE001
        pass
    torch.cuda.empty_cache()


def write_outputs(args, header, rec, checks, ok, started, plot_fn):
    """The JSON file (header, then results, checks, errors) and the plot."""
    out = dict(header)
    out.update({
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.time() - started, 1),
        "results": rec.results,
        "checks": checks,
        "errors": rec.errors,
        "ok": bool(ok),
    })
    with open(args.out_json, "w") as f:
        json.dump(out, f, indent=1)
    log("wrote %s" % args.out_json)
    if args.out_png:
        try:
            plot_fn(args.out_png)
            log("wrote %s" % args.out_png)
        except Exception as e:  # noqa: BLE001 - the numbers are in the JSON anyway
            log("plot failed: %r" % e)
    log("checks %s, %d errors recorded" % ("passed" if ok else "FAILED", len(rec.errors)))


def plot_bars(path, results, copy_gbps, dtypes, group_of, group_label):
    """Bars of effective GB/s: a panel per pass and dtype, a group per
    group_of(entry), a bar per implementation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"unifuse": "tab:blue", "eager": "tab:orange", "compile": "tab:green"}
    fig, axes = plt.subplots(len(OPS), len(dtypes), figsize=(6.5 * len(dtypes), 3.6 * len(OPS)),
                             squeeze=False)
    for r, op in enumerate(OPS):
        for c, dt in enumerate(dtypes):
            ax = axes[r][c]
            mine = [e for e in results if e["op"] == op and e["dtype"] == dt]
            groups = []
            for e in mine:
                if group_of(e) not in groups:
                    groups.append(group_of(e))
            width = 0.8 / len(IMPLS)
            for k, impl in enumerate(IMPLS):
                vals = {group_of(e): e["gbps"] or 0 for e in mine if e["impl"] == impl}
                ax.bar([i + (k - 1) * width for i in range(len(groups))],
                       [vals.get(g, 0) for g in groups], width, color=colors[impl], label=impl)
            if copy_gbps:
                ax.axhline(copy_gbps, color="gray", linestyle="--", label="copy (ceiling)")
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels([group_label(g) for g in groups], fontsize="small")
            ax.set_title("%s, %s" % (op, dt))
            ax.set_ylabel("effective GB/s")
            ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=4, fontsize="small")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------
# The epilogue's cases


def composition(name, p):
    """What unifuse replaces, as PyTorch code of (x, b, r)."""
    if name == "bias_act_scale":
        def bias_act_scale(x, b, r):
            return torch.relu(x + b) * SCALE

        return bias_act_scale

    def bias_dropout_residual(x, b, r):
        return F.dropout(x + b, p, training=True) + r

    return bias_dropout_residual


def effective_bytes(name, es, rows, cols):
    """Bytes per pass as bench/bench_epilogue.c counts them."""
    tensor, vector = rows * cols * es, cols * es
    res = int(CONFIGS[name][3])
    fwd = (2 + res) * tensor + vector
    bwd = (3 + res) * tensor + 2 * vector
    return {"forward": fwd, "backward": bwd, "fwd+bwd": fwd + bwd}


def make_tensors(name, dt, rows, cols, seed):
    """Inputs x, b, dy (and r), outputs y, dx, db (and dr) on DEVICE."""
    tdt = torch_dtype(dt)
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    t = {"x": uniform(gen, (rows, cols), -4, 4, tdt), "b": uniform(gen, (cols,), -1, 1, tdt),
         "dy": uniform(gen, (rows, cols), -1, 1, tdt)}
    if CONFIGS[name][3]:
        t["r"] = uniform(gen, (rows, cols), -1, 1, tdt)
        t["dr"] = torch.empty_like(t["x"])
    t["y"], t["dx"] = torch.empty_like(t["x"]), torch.empty_like(t["x"])
    t["db"] = torch.empty_like(t["b"])
    return t


def check_exact(name, dt, t):
    """Without dropout: y, dx, dbias and dresidual against float64
    autograd of the composition."""
    _, rtol, atol = DTYPES[dt]
    rows, cols = t["x"].shape
    tdt = t["x"].dtype
    res = "r" in t
    c = Checks()
    db_sum = torch.zeros(cols, dtype=torch.float64, device=t["x"].device)
    db_abs = torch.zeros_like(db_sum)
    b64 = t["b"].double()
    for i, j in row_chunks(rows, cols):
        x64 = t["x"][i:j].double().requires_grad_(True)
        z = x64 + b64
        y64 = torch.relu(z) * SCALE if name == "bias_act_scale" else z + t["r"][i:j].double()
        (g,) = torch.autograd.grad(y64, x64, t["dy"][i:j].double())
        c.add("y", compare(t["y"][i:j], y64.detach().to(tdt), rtol, atol))
        c.add("dx", compare(t["dx"][i:j], g.to(tdt), rtol, atol))
        if res:  # dresidual is dy, copied
            c.add("dresidual", (0.0, int((t["dr"][i:j] != t["dy"][i:j]).sum())))
        db_sum += g.sum(0)
        db_abs += g.abs().sum(0)
        del x64, z, y64, g
    c.add("dbias", compare_sum(t["db"], db_sum, db_abs, rows, dt))
    return c


def check_dropout(dt, p, t):
    """bias_dropout_residual with dropout, structurally (module doc)."""
    _, rtol, atol = DTYPES[dt]
    rows, cols = t["x"].shape
    k = kernel_scale(p)
    c = Checks()
    db_sum = torch.zeros(cols, dtype=torch.float64, device=t["x"].device)
    db_abs = torch.zeros_like(db_sum)
    b64 = t["b"].double()
    kept = known = 0
    for i, j in row_chunks(rows, cols):
        dy = t["dy"][i:j].double()
        r = t["r"][i:j].double()
        full = (t["x"][i:j].double() + b64) * k + r
        y, dx = t["y"][i:j].double(), t["dx"][i:j].double()
        sure = dy != 0  # where dx tells whether the element was kept
        keep = (dx != 0) & sure
        want_y = torch.where(keep, full, r)
        c.add("y", compare(y[sure], want_y[sure], rtol, atol))
        unsure_ok = ((y - r).abs() <= atol + rtol * r.abs()) | \
                    ((y - full).abs() <= atol + rtol * full.abs())
        c.add("y_where_dy_is_0", (0.0, int((~unsure_ok & ~sure).sum())))
        c.add("dx", compare(dx[keep], dy[keep] * k, rtol, atol))
        c.add("dresidual", (0.0, int((t["dr"][i:j] != t["dy"][i:j]).sum())))
        # dbias sums the unrounded gradients, not dx after its rounding.
        g = torch.where(keep, dy * k, torch.zeros_like(dy))
        db_sum += g.sum(0)
        db_abs += g.abs().sum(0)
        kept += int(keep.sum())
        known += int(sure.sum())
        del dy, r, full, y, dx, sure, keep, want_y, unsure_ok, g
    c.add("dbias", compare_sum(t["db"], db_sum, db_abs, rows, dt))
    frac = 1.0 - kept / max(known, 1)
    sigma = math.sqrt(p * (1 - p) / max(known, 1))
    c.add("drop_fraction", (abs(frac - p), int(abs(frac - p) > 6 * sigma + 1e-12)))
    return c, frac


def check_case(uf, name, p, dt, t, stream):
    """Runs unifuse without dropout and checks it exactly, then, for a
    configuration with dropout, with dropout and checks it structurally.
    Returns (checks entry, ok)."""
    ufdt = DTYPES[dt][0]
    fwd, bwd = uf.passes(name, 0.0, ufdt, t, stream)
    fwd()
    bwd()
    sync()
    c = check_exact(name, dt, t)
    entry = {"exact": c.result()}
    line = c.summary()
    if p:
        fwd, bwd = uf.passes(name, p, ufdt, t, stream)
        fwd()
        bwd()
        sync()
        cd, frac = check_dropout(dt, p, t)
        entry["dropout"] = cd.result()
        entry["dropout"]["drop_fraction_value"] = frac
        line += "  | p=%g: %s  dropped %.5f" % (p, cd.summary(), frac)
    entry["ok"] = all(v["ok"] for v in entry.values() if isinstance(v, dict))
    return entry, line


def run_config(uf, rec, args, dt, cols, name, checks):
    rows = max(1, (args.count + cols // 2) // cols)  # as the C benchmark
    p = args.p if CONFIGS[name][2] else 0.0
    t = make_tensors(name, dt, rows, cols, 1234 + cols)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    tag = "%s %s [%d,%d]" % (dt, name, rows, cols)
    ok = True
    if not args.no_check:
        # Correctness first: a wrong kernel's speed is not worth reporting.
        try:
            entry, line = check_case(uf, name, p, dt, t, stream)
        except Exception as e:  # noqa: BLE001 - record, then go on
            rec.error("unifuse " + tag, e)
            return False
        entry.update({"dtype": dt, "config": name, "rows": rows, "cols": cols})
        checks.append(entry)
        ok = entry["ok"]
        log("check %s: %s  %s" % (tag, line, "ok" if ok else "FAILED"))

    es = t["x"].element_size()
    nbytes = effective_bytes(name, es, rows, cols)
    fields = {"config": name, "act": CONFIGS[name][0], "dropout_p": p, "dtype": dt,
              "rows": rows, "cols": cols}
    row = {}
    fwd, bwd = uf.passes(name, p, DTYPES[dt][0], t, stream)
    rec.unifuse(row, fwd, bwd, nbytes, fields, tag)
    has_r = "r" in t
    rec.torch_impls(row, composition(name, p), [t["x"], t["b"], t.get("r")],
              [0, 1, 2] if has_r else [0, 1], t["dy"], nbytes, fields, tag)
    print_rows(row, "%s %s [%d,%d]" % (dt, name, rows, cols))
    del t
    return ok


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default="build-cuda/libunifuse-cuda.so",
                   help="the CUDA build's library (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="4 Mi elements, 10 timed calls")
    p.add_argument("--dtypes", default="f16,bf16,f32", help="comma list (fp16,bf16,fp32 or f16..)")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma list (default: both)")
    p.add_argument("--cols", default="4096", help="comma list of cols (default 4096)")
    p.add_argument("--count", type=int, default=None,
                   help="elements, rows = count / cols (default 64 Mi)")
    p.add_argument("--p", type=float, default=0.1, help="dropout probability (default 0.1)")
    p.add_argument("--iters", type=int, default=None, help="timed calls (default 50)")
    p.add_argument("--no-check", action="store_true", help="time only")
    p.add_argument("--out-json", default="compare_torch_epilogue.json")
    p.add_argument("--out-png", default="compare_torch_epilogue.png",
                   help="the plot ('' for none)")
    a = p.parse_args(argv)
    a.dtypes = [ALIASES.get(t, t) for t in a.dtypes.split(",") if t]
    for t in a.dtypes:
        if t not in DTYPES:
            p.error("unknown dtype %r" % t)
    a.configs = [c for c in a.configs.split(",") if c]
    for c in a.configs:
        if c not in CONFIGS:
            p.error("unknown configuration %r (known: %s)" % (c, ", ".join(CONFIGS)))
    try:
        a.cols = [int(v) for v in a.cols.split(",") if v]
    except ValueError:
        p.error("--cols takes integers")
    if not a.cols or min(a.cols) < 1:
        p.error("--cols must be positive")
    if a.count is None:
        a.count = (4 << 20) if a.quick else (64 << 20)
    if a.count < 1:
        p.error("--count must be positive")
    if not 0 < a.p < 1:
        p.error("--p must be in (0, 1)")
    if a.iters is None:
        a.iters = 10 if a.quick else 50
    if a.iters < 1:
        p.error("--iters must be positive")
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    setup = setup_torch(args.lib, UnifuseEpilogue)
    if setup is None:
        return 1
    uf, info, triton_version = setup
    timer = event_timer(args.iters)
    timer_name = "CUDA events (median of %d after 3 warm-up calls)" % args.iters
    log("unifuse %s (%s) on %s; torch %s, triton %s" % (
        uf.version(), args.lib, info.name.decode(), torch.__version__, triton_version))
    log("timing: %s; about %d elements, dropout p %g, s %g; GB/s = effective bytes / time"
        % (timer_name, args.count, args.p, SCALE))
    log("bias_act_scale is relu(x + b) * s: issue 5's + b2 has no place in uf_epilogue_desc "
        "(one bias), so neither side adds it")
    copy_gbps, copy_bytes = measure_copy(timer, args.quick)
    if copy_gbps:
        log("copy: %d MiB device to device: %.1f GB/s (read + write)"
            % (copy_bytes // MIB, copy_gbps))
    table_header("dtype config [rows,cols]")

    rec = Recorder(timer, args.quick, copy_gbps)
    checks = []
    ok = True
    started = time.time()
    for dt in args.dtypes:
        for cols in args.cols:
            for name in args.configs:
                what = "%s %s cols=%d" % (dt, name, cols)
                try:
                    ok &= run_config(uf, rec, args, dt, cols, name, checks)
                except torch.cuda.OutOfMemoryError as e:
                    rec.errors.append({"what": what, "error": "out of memory: %r" % e})
                    log("skipped %s: out of memory" % what)
                except Exception:  # noqa: BLE001 - keep the other cases
                    ok = False
                    rec.errors.append({"what": what, "error": traceback.format_exc()})
                    log("error: %s:\n%s" % (what, traceback.format_exc()))
                release_torch()

    header = {
        "device": info.name.decode(), "backend": "cuda", "unifuse_version": uf.version(),
        "torch_version": torch.__version__, "triton_version": triton_version,
        "timer": timer_name, "count": args.count, "dropout_p": args.p, "scale": SCALE,
        "iters": args.iters, "copy_gbps": copy_gbps, "copy_bytes": copy_bytes,
        "note": "bias_act_scale omits issue 5's + b2 on both sides: the epilogue has one bias",
    }
    write_outputs(args, header, rec, checks, ok, started, lambda path: plot_bars(
        path, rec.results, copy_gbps, args.dtypes, lambda e: (e["config"], e["cols"]),
        lambda g: "%s\ncols %d" % g))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
