#!/usr/bin/env python3
"""Compare unifuse's LayerNorm and RMSNorm with PyTorch on a CUDA GPU.

Loads the CUDA build of libunifuse through ctypes and calls uf_norm_forward
/ uf_norm_backward on torch tensors x [rows, N] (on torch's current stream):
LayerNorm with weight and bias, RMSNorm with weight, rows so that rows * N
is about --count elements. For each dtype, norm and N it

  * checks unifuse against float64 torch with the tolerances of
    tests/harness.c: y against the norm, mean and rstd (fp32) against the
    row statistics, dx against autograd, dweight and dbias against autograd
    with th_compare_sum's bound on sums;
  * times, with CUDA events (median of --iters calls after warm-up),
    unifuse, torch.nn.functional.layer_norm / rms_norm (torch >= 2.4; an
    older torch has no rms_norm: recorded, RMSNorm then unifuse only) and
    torch.compile of them: forward (no autograd), backward (autograd for x,
    weight and bias, graph retained) and forward + backward, next to
    torch's device-to-device copy;
  * writes a JSON file and a PNG bar chart, and prints a table.

Effective bytes as in bench/bench_norm.c: forward x read, y written, weight
(and bias) read, the fp32 statistics written; backward x and dy read, dx
written, weight and statistics read, dweight (and dbias) written.

Exit status: 0 when every check passes, 1 otherwise. A failing
torch.compile is recorded, not fatal.
"""

import argparse
import ctypes
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_torch_epilogue as ep  # noqa: E402
from compare_torch import ALIASES, DTYPES, MIB, compare, log, measure_copy  # noqa: E402
from compare_torch_activation import UnifuseActivation, event_timer  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --help and py_compile work without it
    torch = F = None

UF_NORM_LAYER, UF_NORM_RMS = 1, 2
NORMS = ("layer", "rms")
EPS = 1e-5
# Bytes of one statistic: fp32 for f32, f16 and bf16.
STAT_BYTES = 4


class NormDesc(ctypes.Structure):
    """uf_norm_desc of src/unifuse/norm.h (C enums are int)."""

    _fields_ = [
        ("kind", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("eps", ctypes.c_double),
        ("has_weight", ctypes.c_int),
        ("has_bias", ctypes.c_int),
        ("add_residual", ctypes.c_int),
    ]


class UnifuseNorm(UnifuseActivation):
    """The activation binding (for its checked calls) plus the norms."""

    def __init__(self, path):
        super().__init__(path)
        # 48 bytes on x86-64: a mismatch means the binding left the header.
        if ctypes.sizeof(NormDesc) != 48 and ctypes.sizeof(ctypes.c_void_p) == 8:
            raise RuntimeError("NormDesc layout does not match uf_norm_desc")
        vp, desc_p = ctypes.c_void_p, ctypes.POINTER(NormDesc)
        self.lib.uf_norm_forward.argtypes = [desc_p] + [vp] * 9
        self.lib.uf_norm_backward.argtypes = [desc_p] + [vp] * 10
        self.lib.uf_norm_forward.restype = ctypes.c_int
        self.lib.uf_norm_backward.restype = ctypes.c_int

    def passes(self, norm, dtype, t, stream):
        """(forward, backward) callables on the tensors of t (see
        make_tensors): the forward writes the statistics the backward reads;
        the backward asks for dweight (and dbias)."""
        layer = norm == "layer"
        rows, cols = t["x"].shape
        desc = NormDesc(UF_NORM_LAYER if layer else UF_NORM_RMS, dtype, rows, cols, EPS, 1,
                        int(layer), 0)
        dref = ctypes.byref(desc)

        def ptr(key):
            return t[key].data_ptr() if t.get(key) is not None else None

        return (self.call("uf_norm_forward", dref, ptr("x"), None, ptr("w"), ptr("b"), ptr("y"),
                          None, ptr("mean"), ptr("rstd"), stream),
                self.call("uf_norm_backward", dref, ptr("x"), ptr("w"), ptr("mean"), ptr("rstd"),
                          ptr("dy"), None, ptr("dx"), ptr("dw"), ptr("db"), stream))


def torch_norm(norm):
    """PyTorch's own norm as a function of (x, w, b); None where this torch
    has none (rms_norm came with torch 2.4)."""
    if norm == "layer":
        def layer_norm(x, w, b):
            return F.layer_norm(x, (x.shape[-1],), w, b, EPS)

        return layer_norm
    if not hasattr(F, "rms_norm"):
        return None

    def rms_norm(x, w, b):
        return F.rms_norm(x, (x.shape[-1],), w, EPS)

    return rms_norm


def reference(norm, x, w, b):
    """(y, hhat) in x's dtype (float64 in the checks), written out rather
    than taken from torch, so that RMSNorm is checked on any torch."""
    if norm == "layer":
        mean = x.mean(-1, keepdim=True)
        hhat = (x - mean) * torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + EPS)
        return hhat * w + b, hhat
    hhat = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + EPS)
    return hhat * w, hhat


def effective_bytes(norm, es, rows, cols):
    """Bytes per pass as bench/bench_norm.c counts them."""
    layer = int(norm == "layer")
    tensor, vector, stats = rows * cols * es, cols * es, (1 + layer) * rows * STAT_BYTES
    fwd = 2 * tensor + (1 + layer) * vector + stats
    bwd = 3 * tensor + (2 + layer) * vector + stats
    return {"forward": fwd, "backward": bwd, "fwd+bwd": fwd + bwd}


def make_tensors(norm, dt, rows, cols, seed):
    """Inputs x, w (b), dy; outputs y, dx, dw (db) and the fp32 statistics."""
    tdt = ep.torch_dtype(dt)
    gen = torch.Generator(device=ep.DEVICE).manual_seed(seed)
    t = {"x": ep.uniform(gen, (rows, cols), -4, 4, tdt),
         "w": ep.uniform(gen, (cols,), 0.5, 1.5, tdt),
         "dy": ep.uniform(gen, (rows, cols), -1, 1, tdt)}
    if norm == "layer":
        t["b"] = ep.uniform(gen, (cols,), -1, 1, tdt)
        t["db"] = torch.empty_like(t["b"])
        t["mean"] = torch.empty(rows, dtype=torch.float32, device=ep.DEVICE)
    t["rstd"] = torch.empty(rows, dtype=torch.float32, device=ep.DEVICE)
    t["y"], t["dx"] = torch.empty_like(t["x"]), torch.empty_like(t["x"])
    t["dw"] = torch.empty_like(t["w"])
    return t


def check_case(norm, dt, t):
    """unifuse's outputs in t against float64 torch, row block by row
    block (see the module doc)."""
    _, rtol, atol = DTYPES[dt]
    _, srtol, satol = DTYPES["f32"]  # the statistics are fp32
    rows, cols = t["x"].shape
    tdt = t["x"].dtype
    layer = norm == "layer"
    c = ep.Checks()
    zeros = torch.zeros(cols, dtype=torch.float64, device=t["x"].device)
    sums = {k: [zeros.clone(), zeros.clone()] for k in (("dweight", "dbias") if layer
                                                        else ("dweight",))}
    w64 = t["w"].double().requires_grad_(True)
    b64 = t["b"].double().requires_grad_(True) if layer else None
    for i, j in ep.row_chunks(rows, cols):
        x64 = t["x"][i:j].double().requires_grad_(True)
        dy = t["dy"][i:j].double()
        y64, hhat = reference(norm, x64, w64, b64 if layer else 0.0)
        c.add("y", compare(t["y"][i:j], y64.detach().to(tdt), rtol, atol))
        x0 = x64.detach()
        if layer:
            c.add("mean", compare(t["mean"][i:j], x0.mean(-1), srtol, satol))
            var = x0.var(-1, unbiased=False)
        else:
            var = (x0 * x0).mean(-1)
        c.add("rstd", compare(t["rstd"][i:j], torch.rsqrt(var + EPS), srtol, satol))
        leaves = [x64, w64] + ([b64] if layer else [])
        grads = torch.autograd.grad(y64, leaves, dy)
        c.add("dx", compare(t["dx"][i:j], grads[0].to(tdt), rtol, atol))
        terms = {"dweight": dy * hhat.detach(), "dbias": dy}
        for k, (s, a) in sums.items():
            s += grads[1 if k == "dweight" else 2]
            a += terms[k].abs().sum(0)
        del x64, dy, y64, hhat, x0, var, grads, terms
    for k, (s, a) in sums.items():
        c.add(k, ep.compare_sum(t["dw" if k == "dweight" else "db"], s, a, rows, dt))
    return c


def run_config(uf, rec, args, dt, cols, norm, checks):
    rows = max(1, (args.count + cols // 2) // cols)  # as the C benchmark
    t = make_tensors(norm, dt, rows, cols, 4321 + cols)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    tag = "%s %s [%d,%d]" % (dt, norm, rows, cols)
    fwd, bwd = uf.passes(norm, DTYPES[dt][0], t, stream)
    ok = True
    if not args.no_check:
        # Correctness first: a wrong kernel's speed is not worth reporting.
        try:
            fwd()
            bwd()
            ep.sync()
            c = check_case(norm, dt, t)
        except Exception as e:  # noqa: BLE001 - record, then go on
            rec.error("unifuse " + tag, e)
            return False
        entry = c.result()
        entry.update({"dtype": dt, "norm": norm, "rows": rows, "cols": cols})
        checks.append(entry)
        ok = entry["ok"]
        log("check %s: %s  %s" % (tag, c.summary(), "ok" if ok else "FAILED"))

    nbytes = effective_bytes(norm, t["x"].element_size(), rows, cols)
    fields = {"norm": norm, "dtype": dt, "rows": rows, "cols": cols}
    row = {}
    rec.unifuse(row, fwd, bwd, nbytes, fields, tag)
    fn = torch_norm(norm)
    if fn is None:
        rec.error("torch %s" % tag, RuntimeError("torch %s has no F.rms_norm (torch >= 2.4)"
                                                  % torch.__version__))
    else:
        layer = norm == "layer"
        rec.torch_impls(row, fn, [t["x"], t["w"], t.get("b")], [0, 1, 2] if layer else [0, 1],
                        t["dy"], nbytes, fields, tag)
    ep.print_rows(row, tag)
    del t
    return ok


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default="build-cuda/libunifuse-cuda.so",
                   help="the CUDA build's library (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="4 Mi elements, 10 timed calls")
    p.add_argument("--dtypes", default="f16,bf16,f32", help="comma list (fp16,bf16,fp32 or f16..)")
    p.add_argument("--norms", default="layer,rms", help="comma list (default: layer,rms)")
    p.add_argument("--cols", default="768,1024,4096,8192,16384",
                   help="comma list of N (default: %(default)s)")
    p.add_argument("--count", type=int, default=None,
                   help="elements, rows = count / N (default 64 Mi)")
    p.add_argument("--iters", type=int, default=None, help="timed calls (default 50)")
    p.add_argument("--no-check", action="store_true", help="time only")
    p.add_argument("--out-json", default="compare_torch_norm.json")
    p.add_argument("--out-png", default="compare_torch_norm.png", help="the plot ('' for none)")
    a = p.parse_args(argv)
    a.dtypes = [ALIASES.get(t, t) for t in a.dtypes.split(",") if t]
    for t in a.dtypes:
        if t not in DTYPES:
            p.error("unknown dtype %r" % t)
    a.norms = [n for n in a.norms.split(",") if n]
    for n in a.norms:
        if n not in NORMS:
            p.error("unknown norm %r (known: layer, rms)" % n)
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
    if a.iters is None:
        a.iters = 10 if a.quick else 50
    if a.iters < 1:
        p.error("--iters must be positive")
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    setup = ep.setup_torch(args.lib, UnifuseNorm)
    if setup is None:
        return 1
    uf, info, triton_version = setup
    timer = event_timer(args.iters)
    timer_name = "CUDA events (median of %d after 3 warm-up calls)" % args.iters
    log("unifuse %s (%s) on %s; torch %s, triton %s" % (
        uf.version(), args.lib, info.name.decode(), torch.__version__, triton_version))
    log("timing: %s; about %d elements, eps %g; GB/s = effective bytes / time"
        % (timer_name, args.count, EPS))
    copy_gbps, copy_bytes = measure_copy(timer, args.quick)
    if copy_gbps:
        log("copy: %d MiB device to device: %.1f GB/s (read + write)"
            % (copy_bytes // MIB, copy_gbps))
    ep.table_header("dtype norm [rows,N]")

    rec = ep.Recorder(timer, args.quick, copy_gbps)
    checks = []
    ok = True
    started = time.time()
    for dt in args.dtypes:
        for norm in args.norms:
            for cols in args.cols:
                what = "%s %s N=%d" % (dt, norm, cols)
                try:
                    ok &= run_config(uf, rec, args, dt, cols, norm, checks)
                except torch.cuda.OutOfMemoryError as e:
                    rec.errors.append({"what": what, "error": "out of memory: %r" % e})
                    log("skipped %s: out of memory" % what)
                except Exception:  # noqa: BLE001 - keep the other cases
                    ok = False
                    rec.errors.append({"what": what, "error": traceback.format_exc()})
                    log("error: %s:\n%s" % (what, traceback.format_exc()))
                ep.release_torch()

    header = {
        "device": info.name.decode(), "backend": "cuda", "unifuse_version": uf.version(),
        "torch_version": torch.__version__, "triton_version": triton_version,
        "timer": timer_name, "count": args.count, "eps": EPS, "iters": args.iters,
        "copy_gbps": copy_gbps, "copy_bytes": copy_bytes,
    }
    ep.write_outputs(args, header, rec, checks, ok, started, lambda path: ep.plot_bars(
        path, rec.results, copy_gbps, args.dtypes, lambda e: (e["norm"], e["cols"]),
        lambda g: "%s\nN %d" % g))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
