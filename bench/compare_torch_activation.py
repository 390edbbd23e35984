#!/usr/bin/env python3
"""Compare unifuse's activation + dropout with PyTorch on a CUDA GPU.

Loads the CUDA build of libunifuse through ctypes and calls
uf_activation_forward / _backward (uf_dropout_forward / _backward for
dropout alone, "none" in --acts) on torch tensors, on torch's current
stream. For each dtype, activation and dropout p (0 and --p) it

  * checks unifuse. Without dropout: y against torch.nn.functional.<act>
    and dx against its autograd gradient, both in float64, with the
    tolerances of tests/harness.c. With dropout: every y is 0 or
    act(x) / (1 - p) and every dx is 0 or dy * act'(x) / (1 - p), they
    agree with the keep bits the forward writes, and the dropped fraction
    is within 6 standard deviations of p;
  * times, with CUDA events (median of --iters calls after warm-up),
    unifuse, PyTorch eager (the activation, then F.dropout) and
    torch.compile of that composition: forward (no autograd), backward
    (autograd through the composition, its graph retained) and forward +
    backward, next to torch's device-to-device tensor copy (the ceiling);
  * writes a JSON file and a PNG bar chart, and prints a table.

Effective bytes as in bench/bench_activation.c: forward x read + y written;
backward x and dy read + dx written (dy + dx where x is not read: dropout
alone, identity); forward + backward the sum. PyTorch also stores and reads
a mask, which is not counted.

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
                           Unifuse, compare, log, measure_copy)

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --help and py_compile work without it
    torch = F = None

DROPOUT_ALONE = "none"
# The mask's seed and offset do not change the work done: kept fixed.
SEED, OFFSET = 20261129, 0
OPS = ("forward", "backward", "fwd+bwd")
IMPLS = ("unifuse", "eager", "compile")


class ActivationDesc(ctypes.Structure):
    """uf_activation_desc of src/unifuse/activation.h (C enums are int)."""

    _fields_ = [("kind", ctypes.c_int), ("param", ctypes.c_double * 2)]


class DropoutDesc(ctypes.Structure):
    """uf_dropout_desc of src/unifuse/activation.h."""

    _fields_ = [("p", ctypes.c_double), ("seed", ctypes.c_uint64), ("offset", ctypes.c_uint64)]


class UnifuseActivation(Unifuse):
    """The softmax binding plus the activation and dropout calls."""

    def __init__(self, path):
        super().__init__(path)
        lib = self.lib
        vp, i64, c_int = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        act_p, drop_p = ctypes.POINTER(ActivationDesc), ctypes.POINTER(DropoutDesc)
        signatures = {
            "uf_activation_forward": [act_p, drop_p, c_int, i64, vp, vp, vp, vp],
            "uf_activation_backward": [act_p, drop_p, c_int, i64, vp, vp, vp, vp],
            "uf_dropout_forward": [drop_p, c_int, i64, vp, vp, vp, vp],
            "uf_dropout_backward": [drop_p, c_int, i64, vp, vp, vp],
        }
        for name, argtypes in signatures.items():
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = c_int
        lib.uf_activation_default.argtypes = [c_int]
        lib.uf_activation_default.restype = ActivationDesc
        lib.uf_activation_name.argtypes = [c_int]
        lib.uf_activation_name.restype = ctypes.c_char_p
        # name -> uf_activation, from the library itself (NULL ends the list).
        self.kinds = {}
        for kind in range(256):
            name = lib.uf_activation_name(kind)
            if name is None:
                break
            self.kinds[name.decode()] = kind

    def call(self, name, *args):
        """A function of no arguments that makes one call and checks it."""
        fn = getattr(self.lib, name)

        def run():
            st = fn(*args)
            if st:
                self.check(st, name)

        return run

    def passes(self, act, p, dtype, n, x, y, dy, dx, keep, stream):
        """(forward, backward) callables on these tensors. act: a name of
        uf_activation_name, or DROPOUT_ALONE; keep: None or a uint8 tensor
        for the keep bits. Descriptors are kept alive in the closures."""
        drop = DropoutDesc(p, SEED, OFFSET) if p else None
        dref = ctypes.byref(drop) if drop else None
        kb = keep.data_ptr() if keep is not None else None
        if act == DROPOUT_ALONE:
            return (self.call("uf_dropout_forward", dref, dtype, n, x.data_ptr(), y.data_ptr(),
                              kb, stream),
                    self.call("uf_dropout_backward", dref, dtype, n, dy.data_ptr(),
                              dx.data_ptr(), stream))
        desc = self.lib.uf_activation_default(self.kinds[act])
        aref = ctypes.byref(desc)
        return (self.call("uf_activation_forward", aref, dref, dtype, n, x.data_ptr(),
                          y.data_ptr(), kb, stream),
                self.call("uf_activation_backward", aref, dref, dtype, n, x.data_ptr(),
                          dy.data_ptr(), dx.data_ptr(), stream))


# --------------------------------------------------------------------------
# The PyTorch side


def torch_activation(name):
    """torch.nn.functional's function for a uf_activation_name name, with
    PyTorch's default parameters (uf_activation_default's)."""
    if name in ("identity", DROPOUT_ALONE):
        return lambda x: x
    if name == "gelu_tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "gelu":  # the erf form, said explicitly
        return lambda x: F.gelu(x, approximate="none")
    return getattr(F, name)


def composition(name, p):
    """What unifuse replaces: the activation, then dropout when p > 0."""
    act = torch_activation(name)
    if p == 0:
        return act

    def act_dropout(x):
        return F.dropout(act(x), p, training=True)

    return act_dropout


def effective_bytes(name, op, tensor_bytes):
    """The fewest bytes each pass must move (see the module doc)."""
    fwd = 2 * tensor_bytes
    bwd = (2 if name in ("identity", DROPOUT_ALONE) else 3) * tensor_bytes
    return {"forward": fwd, "backward": bwd, "fwd+bwd": fwd + bwd}[op]


def kernel_scale(p):
    """1 / (1 - p) rounded to fp32, the factor the kernels multiply by."""
    return float(torch.tensor(1.0 / (1.0 - p), dtype=torch.float32)) if p else 1.0


def unpack_bits(keep, n):
    """Bit i % 8 of byte i / 8 -> bool element i."""
    shifts = torch.arange(8, device=keep.device, dtype=torch.uint8)
    return ((keep.unsqueeze(1) >> shifts) & 1).reshape(-1)[:n].bool()


def event_timer(iters):
    """timer(fn, quick) -> median milliseconds of `iters` calls of fn, each
    between its own pair of CUDA events, after 3 warm-up calls. The tensors
    are far larger than L2, so no flush is needed; calls queue back to back,
    so the GPU does not wait for Python between them."""

    def timer(fn, quick):
        for _ in range(3):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for i in range(iters):
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        t = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
        return t[iters // 2] if iters % 2 else 0.5 * (t[iters // 2 - 1] + t[iters // 2])

    return timer


# --------------------------------------------------------------------------
# Checks


def check_case(dt, name, p, x, dy, y, dx, keep, chunk=1 << 24):
    """Checks unifuse's y, dx and keep bits against float64 torch, chunk by
    chunk so the float64 copies stay small (see the module doc). chunk is
    a multiple of 8, so each chunk starts on a byte of keep bits."""
    _, rtol, atol = DTYPES[dt]
    act = torch_activation(name)
    scale = kernel_scale(p)
    n = x.numel()
    out = {k: [0.0, 0] for k in ("forward", "backward", "zero_or_scaled")}
    kept = 0
    for i in range(0, n, chunk):
        j = min(n, i + chunk)
        kb = unpack_bits(keep[i // 8:(j + 7) // 8], j - i)
        x64 = x[i:j].double().requires_grad_(True)
        y64 = act(x64)
        if y64 is x64:  # identity: a value autograd can differentiate
            y64 = x64 * 1.0
        (g64,) = torch.autograd.grad(y64, x64, dy[i:j].double())
        want_y = torch.where(kb, y64.detach() * scale, torch.zeros_like(g64))
        want_dx = torch.where(kb, g64 * scale, torch.zeros_like(g64))
        for key, got, want in (("forward", y[i:j], want_y), ("backward", dx[i:j], want_dx)):
            worst, bad = compare(got, want, rtol, atol)
            out[key][0] = max(out[key][0], worst)
            out[key][1] += bad
        # Without the keep bits: each y and dx is 0 or the scaled value.
        for got, full in ((y[i:j], y64.detach() * scale), (dx[i:j], g64 * scale)):
            g = got.double()
            ok = (g == 0) | ((g - full).abs() <= atol + rtol * full.abs())
            out["zero_or_scaled"][1] += int((~ok).sum())
        kept += int(kb.sum())
        del x64, y64, g64, want_y, want_dx
    res = {k: {"max_abs_err": v[0], "bad": v[1], "ok": v[1] == 0} for k, v in out.items()}
    drop_frac = 1.0 - kept / n
    sigma = math.sqrt(p * (1 - p) / n)
    res["drop_fraction"] = {"value": drop_frac, "p": p,
                            "ok": abs(drop_frac - p) <= 6 * sigma + 1e-12}
    res["ok"] = all(v["ok"] for v in res.values())
    return res


# --------------------------------------------------------------------------
# One dtype and activation


def run_config(uf, timer, args, dt, name, copy_gbps, results, checks, errors):
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dt]
    ufdt = DTYPES[dt][0]
    n = args.count
    tensor_bytes = n * torch.empty((), dtype=tdt).element_size()
    gen = torch.Generator(device="cuda").manual_seed(1234)
    x = (torch.rand(n, device="cuda", generator=gen) * 8 - 4).to(tdt)
    dy = (torch.rand(n, device="cuda", generator=gen) * 2 - 1).to(tdt)
    y, dx = torch.empty_like(x), torch.empty_like(x)
    keep = torch.empty((n + 7) // 8, dtype=torch.uint8, device="cuda")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    ok = True

    # Dropout alone is measured with dropout only (with p = 0 it is a copy).
    for p in ([args.p] if name == DROPOUT_ALONE else [0.0, args.p]):
        tag = "%s %s p=%g" % (dt, name, p)
        try:
            fwd, bwd = uf.passes(name, p, ufdt, n, x, y, dy, dx, keep, stream)
            fwd()
            bwd()
            torch.cuda.synchronize()
            if not args.no_check:
                c = check_case(dt, name, p, x, dy, y, dx, keep)
                c.update({"dtype": dt, "act": name, "dropout_p": p, "count": n})
                checks.append(c)
                ok &= c["ok"]
                log("check %-22s fwd max|err| %.2e (%d bad)  bwd %.2e (%d bad)  "
                    "0-or-scaled %d bad  dropped %.5f  %s"
                    % (tag, c["forward"]["max_abs_err"], c["forward"]["bad"],
                       c["backward"]["max_abs_err"], c["backward"]["bad"],
                       c["zero_or_scaled"]["bad"], c["drop_fraction"]["value"],
                       "ok" if c["ok"] else "FAILED"))
        except Exception as e:  # noqa: BLE001 - record, then go on
            ok = False
            errors.append({"what": "unifuse " + tag, "error": repr(e)})
            log("error: unifuse %s: %r" % (tag, e))
            continue

        row = {}

        def record(impl, op, fn):
            nbytes = effective_bytes(name, op, tensor_bytes)
            entry = {"op": op, "impl": impl, "act": name, "dropout_p": p, "dtype": dt,
                     "count": n, "bytes": nbytes, "ms": None, "gbps": None,
                     "pct_of_copy": None}
            try:
                ms = timer(fn, args.quick)
                gbps = nbytes / (ms * 1e6)
                entry.update(ms=ms, gbps=gbps,
                             pct_of_copy=100 * gbps / copy_gbps if copy_gbps else None)
            except Exception as e:  # noqa: BLE001 - e.g. torch.compile failing
                entry["error"] = repr(e)
                errors.append({"what": "%s %s %s" % (impl, op, tag), "error": repr(e)})
                log("error: %s %s %s: %r" % (impl, op, tag, e))
            results.append(entry)
            row[(impl, op)] = entry

        # Timed without keep bits: the fewest bytes, as in the C benchmark.
        fwd, bwd = uf.passes(name, p, ufdt, n, x, y, dy, dx, None, stream)

        def both(fwd=fwd, bwd=bwd):
            fwd()
            bwd()

        record("unifuse", "forward", fwd)
        record("unifuse", "backward", bwd)
        record("unifuse", "fwd+bwd", both)
        if name == "identity" and p == 0:  # nothing at all for PyTorch to time
            print_rows(row, dt, name, p)
            continue

        for impl in IMPLS[1:]:
            fn = composition(name, p)
            if impl == "compile":
                try:
                    fn = torch.compile(fn, dynamic=False)
                except Exception as e:  # noqa: BLE001
                    errors.append({"what": "torch.compile " + tag, "error": repr(e)})
                    log("error: torch.compile %s: %r" % (tag, e))
                    continue

            def fwd_only(fn=fn):
                with torch.no_grad():
                    fn(x)

            def fwd_bwd(fn=fn):
                xg = x.detach().requires_grad_(True)
                torch.autograd.grad(fn(xg), xg, dy)

            record(impl, "forward", fwd_only)
            try:
                xg = x.detach().requires_grad_(True)
                yg = fn(xg)
            except Exception as e:  # noqa: BLE001
                errors.append({"what": "%s backward graph %s" % (impl, tag), "error": repr(e)})
                log("error: %s backward graph %s: %r" % (impl, tag, e))
                continue

            def bwd_only(yg=yg, xg=xg):
                torch.autograd.grad(yg, xg, dy, retain_graph=True)

            record(impl, "backward", bwd_only)
            record(impl, "fwd+bwd", fwd_bwd)
            del xg, yg
        print_rows(row, dt, name, p)
    del x, dy, y, dx, keep
    return ok


def print_rows(row, dt, name, p):
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
        log("%-8s %-5s %-11s %5.2f %s %7s %s" % (
            op, dt, name, p, " ".join(cells),
            "%6.1f%%" % u["pct_of_copy"] if u and u["pct_of_copy"] else "-", " ".join(ratios)))


# --------------------------------------------------------------------------
# Output


def plot(path, results, copy_gbps, dtypes):
    """Bars of effective GB/s: one panel per pass and dtype, a group per
    activation and p, a bar per implementation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"unifuse": "tab:blue", "eager": "tab:orange", "compile": "tab:green"}
    fig, axes = plt.subplots(len(OPS), len(dtypes), figsize=(6 * len(dtypes), 3.6 * len(OPS)),
                             squeeze=False)
    for r, op in enumerate(OPS):
        for c, dt in enumerate(dtypes):
            ax = axes[r][c]
            groups = []
            for e in results:
                key = (e["act"], e["dropout_p"])
                if e["op"] == op and e["dtype"] == dt and key not in groups:
                    groups.append(key)
            width = 0.8 / len(IMPLS)
            for k, impl in enumerate(IMPLS):
                vals = {(e["act"], e["dropout_p"]): e["gbps"] or 0 for e in results
                        if e["op"] == op and e["dtype"] == dt and e["impl"] == impl}
                ax.bar([i + (k - 1) * width for i in range(len(groups))],
                       [vals.get(g, 0) for g in groups], width, color=colors[impl], label=impl)
            if copy_gbps:
                ax.axhline(copy_gbps, color="gray", linestyle="--", label="copy (ceiling)")
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels(["%s\np=%g" % g for g in groups], fontsize="small")
            ax.set_title("%s, %s" % (op, dt))
            ax.set_ylabel("effective GB/s")
            ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=4, fontsize="small")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default="build-cuda/libunifuse-cuda.so",
                   help="the CUDA build's library (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="4 Mi elements, 10 timed calls")
    p.add_argument("--dtypes", default="f16,bf16,f32", help="comma list (fp16,bf16,fp32 or f16..)")
    p.add_argument("--acts", default="relu,gelu,silu,none",
                   help="names as uf_activation_name spells them; none = dropout alone")
    p.add_argument("--count", type=int, default=None, help="elements (default 64 Mi)")
    p.add_argument("--p", type=float, default=0.1, help="dropout probability (default 0.1)")
    p.add_argument("--iters", type=int, default=None, help="timed calls (default 50)")
    p.add_argument("--no-check", action="store_true", help="time only")
    p.add_argument("--out-json", default="compare_torch_activation.json")
    p.add_argument("--out-png", default="compare_torch_activation.png")
    a = p.parse_args(argv)
    a.dtypes = [ALIASES.get(t, t) for t in a.dtypes.split(",") if t]
    for t in a.dtypes:
        if t not in DTYPES:
            p.error("unknown dtype %r" % t)
    a.acts = [t for t in a.acts.split(",") if t]
    if not a.acts:
        p.error("no activation")
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
    if torch is None:
        log("PyTorch is not installed")
        return 1
    if not torch.cuda.is_available():
        log("no CUDA device visible to torch")
        return 1
    uf = UnifuseActivation(os.path.abspath(args.lib))
    info = uf.device_info()
    if info.backend != UF_BACKEND_CUDA:
        log("%s is the %s build, not CUDA" % (args.lib, uf.lib.uf_backend_name(info.backend)))
        return 1
    unknown = [a for a in args.acts if a != DROPOUT_ALONE and a not in uf.kinds]
    if unknown:
        log("unknown activation(s) %s; the library knows %s" % (unknown, sorted(uf.kinds)))
        return 1
    try:  # torch.compile specialises per dtype and composition: allow them all
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
    timer = event_timer(args.iters)
    timer_name = "CUDA events (median of %d after 3 warm-up calls)" % args.iters

    log("unifuse %s (%s) on %s; torch %s, triton %s" % (
        uf.version(), args.lib, info.name.decode(), torch.__version__, triton_version))
    log("timing: %s; %d elements, dropout p %g; GB/s = effective bytes / time"
        % (timer_name, args.count, args.p))
    copy_gbps, copy_bytes = measure_copy(timer, args.quick)
    if copy_gbps:
        log("copy: %d MiB device to device: %.1f GB/s (read + write)"
            % (copy_bytes // MIB, copy_gbps))
    log("%-8s %-5s %-11s %5s %9s %9s %9s %7s %7s %7s" % (
        "op", "dtype", "act", "p", "unifuse", "eager", "compile", "%copy", "vs eag", "vs cmp"))

    results, checks, errors = [], [], []
    ok = True
    started = time.time()
    for dt in args.dtypes:
        for name in args.acts:
            try:
                ok &= run_config(uf, timer, args, dt, name, copy_gbps, results, checks, errors)
            except torch.cuda.OutOfMemoryError as e:
                errors.append({"what": "%s %s" % (dt, name), "error": "out of memory: %r" % e})
                log("skipped %s %s: out of memory" % (dt, name))
            except Exception as e:  # noqa: BLE001 - keep the other cases
                ok = False
                errors.append({"what": "%s %s" % (dt, name), "error": traceback.format_exc()})
                log("error: %s %s: %r" % (dt, name, e))
            try:
                torch._dynamo.reset()  # drop compiled graphs and their buffers
            except Exception:  # noqa: BLE001
                pass
            torch.cuda.empty_cache()

    out = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": info.name.decode(),
        "backend": "cuda",
        "unifuse_version": uf.version(),
        "torch_version": torch.__version__,
        "triton_version": triton_version,
        "timer": timer_name,
        "count": args.count,
        "dropout_p": args.p,
        "iters": args.iters,
        "copy_gbps": copy_gbps,
        "copy_bytes": copy_bytes,
        "seconds": round(time.time() - started, 1),
        "results": results,
        "checks": checks,
        "errors": errors,
        "ok": bool(ok),
    }
    with open(args.out_json, "w") as f:
        json.dump(out, f, indent=1)
    log("wrote %s" % args.out_json)
    try:
        plot(args.out_png, results, copy_gbps, args.dtypes)
        log("wrote %s" % args.out_png)
    except Exception as e:  # noqa: BLE001 - the numbers are in the JSON anyway
        log("plot failed: %r" % e)
    log("checks %s, %d errors recorded" % ("passed" if ok else "FAILED", len(errors)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
