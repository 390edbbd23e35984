#!/usr/bin/env python3
"""Compare unifuse's scaled masked softmax with PyTorch on a CUDA GPU.

Loads the CUDA build of libunifuse through ctypes and calls
uf_softmax_forward / uf_softmax_backward on torch tensors (data_ptr(), on
torch's current stream). For each dtype, S and mode (none / mask / causal)
it

  * checks unifuse against a float64 torch reference cast to the dtype,
    with the tolerances of tests/harness.c;
  * times unifuse, the eager PyTorch composition and torch.compile of that
    composition, forward and backward, next to a device-to-device copy (the
    ceiling of a memory-bound kernel);
  * writes a JSON file and a PNG plot, and prints a table.

Effective bytes are counted as in bench/bench_softmax.c: forward = x read +
y written (+ the [B,1,S,S] mask read once), backward = y + dy read + dx
written, whatever the implementation really moves.

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

try:
    import torch
except ImportError:  # --help and py_compile work without it
    torch = None

UF_MAX_DIMS = 8
UF_DTYPE_NONE, UF_F32, UF_F16, UF_BF16 = 0, 1, 2, 3
UF_BACKEND_CUDA = 2
MIB = 1 << 20
SCALE = 0.125
MODES = ("none", "mask", "causal")
# dtype name -> (unifuse dtype, rtol, atol): the table of tests/harness.c.
DTYPES = {
    "f32": (UF_F32, 1.3e-6, 1e-5),
    "f16": (UF_F16, 1e-3, 1e-5),
    "bf16": (UF_BF16, 1.6e-2, 1e-5),
}
ALIASES = {"fp32": "f32", "float32": "f32", "fp16": "f16", "half": "f16", "float16": "f16",
           "bfloat16": "bf16"}


class SoftmaxDesc(ctypes.Structure):
    """uf_softmax_desc of src/unifuse.h, field for field (C enums are int)."""

    _fields_ = [
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * UF_MAX_DIMS),
        ("scale", ctypes.c_double),
        ("causal", ctypes.c_int),
        ("mask_dtype", ctypes.c_int),
        ("mask_ndim", ctypes.c_int),
        ("mask_shape", ctypes.c_int64 * UF_MAX_DIMS),
    ]


class DeviceInfo(ctypes.Structure):
    """uf_device_info of src/unifuse.h."""

    _fields_ = [
        ("name", ctypes.c_char * 256),
        ("backend", ctypes.c_int),
        ("multiprocessors", ctypes.c_int),
        ("warp_size", ctypes.c_int),
        ("max_threads_per_block", ctypes.c_int),
        ("shared_memory_per_block", ctypes.c_size_t),
        ("total_memory", ctypes.c_size_t),
    ]


def log(*args):
    print(*args, flush=True)


class Unifuse:
    """Thin ctypes binding of the calls this script needs."""

    def __init__(self, path):
        # On x86-64 the C struct is 160 bytes; a mismatch means the
        # binding above no longer follows the header.
        if ctypes.sizeof(SoftmaxDesc) != 160 and ctypes.sizeof(ctypes.c_void_p) == 8:
            raise RuntimeError("SoftmaxDesc layout does not match uf_softmax_desc")
        self.lib = lib = ctypes.CDLL(path)
        vp = ctypes.c_void_p
        for name in ("uf_softmax_forward", "uf_softmax_backward"):
            fn = getattr(lib, name)
            fn.argtypes = [ctypes.POINTER(SoftmaxDesc), vp, vp, vp, vp]
            fn.restype = ctypes.c_int
        lib.uf_status_string.argtypes = [ctypes.c_int]
        lib.uf_status_string.restype = ctypes.c_char_p
        lib.uf_version.restype = ctypes.c_char_p
        lib.uf_get_device_info.argtypes = [ctypes.POINTER(DeviceInfo)]
        lib.uf_get_device_info.restype = ctypes.c_int
        lib.uf_backend_name.argtypes = [ctypes.c_int]
        lib.uf_backend_name.restype = ctypes.c_char_p

    def version(self):
        return self.lib.uf_version().decode()

    def device_info(self):
        info = DeviceInfo()
        self.check(self.lib.uf_get_device_info(ctypes.byref(info)), "uf_get_device_info")
        return info

    def check(self, status, what):
        if status != 0:
            raise RuntimeError("%s: %s" % (what, self.lib.uf_status_string(status).decode()))

    @staticmethod
    def desc(shape, dtype, causal=False, mask_shape=None, mask_dtype=UF_DTYPE_NONE):
        d = SoftmaxDesc()
        d.dtype = dtype
        d.ndim = len(shape)
        for i, e in enumerate(shape):
            d.shape[i] = e
        d.scale = SCALE
        d.causal = int(causal)
        if mask_shape is not None:
            d.mask_dtype = mask_dtype
            d.mask_ndim = len(mask_shape)
            for i, e in enumerate(mask_shape):
                d.mask_shape[i] = e
        return d

    def forward(self, desc_ref, x, mask, y, stream):
        st = self.lib.uf_softmax_forward(desc_ref, x.data_ptr(),
                                         None if mask is None else mask.data_ptr(),
                                         y.data_ptr(), stream)
        if st:
            self.check(st, "uf_softmax_forward")

    def backward(self, desc_ref, y, dy, dx, stream):
        st = self.lib.uf_softmax_backward(desc_ref, y.data_ptr(), dy.data_ptr(), dx.data_ptr(),
                                          stream)
        if st:
            self.check(st, "uf_softmax_backward")


# --------------------------------------------------------------------------
# Timing


def make_timer(force_events=False):
    """Median milliseconds of fn: triton's do_bench (flushes L2 between
    runs) when available, else CUDA events around each call with our own
    flush."""
    if not force_events:
        try:
            from triton.testing import do_bench

            def timer(fn, quick):
                kw = {"warmup": 10 if quick else 25, "rep": 40 if quick else 100}
                try:
                    return float(do_bench(fn, return_mode="median", **kw))
                except TypeError:  # a triton without return_mode
                    return float(do_bench(fn, quantiles=[0.5], **kw)[0])

            return timer, "triton.testing.do_bench (median)"
        except Exception:  # noqa: BLE001 - any import problem means "no triton"
            pass
    flush = torch.empty(256 * MIB, dtype=torch.uint8, device="cuda")

    def timer(fn, quick):
        for _ in range(3):
            fn()
        n = 10 if quick else 30
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for i in range(n):
            flush.zero_()  # so no run finds its inputs in L2
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        t = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
        return t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])

    return timer, "CUDA events (median)"


# --------------------------------------------------------------------------
# Checks


# The PyTorch compositions unifuse replaces, computed in x's dtype; one
# function per mode so that torch.compile sees plain tensor code.
def softmax_none(x, mask, tri):
    return torch.softmax(x * SCALE, -1)


def softmax_mask(x, mask, tri):
    return torch.softmax(x * SCALE + mask, -1)


def softmax_causal(x, mask, tri):
    return torch.softmax((x * SCALE).masked_fill(tri, float("-inf")), -1)


COMPOSITIONS = {"none": softmax_none, "mask": softmax_mask, "causal": softmax_causal}


def softmax_backward_ref(dy, y):
    """What autograd runs for softmax's backward, from a given y."""
    try:
        return torch.ops.aten._softmax_backward_data(dy, y, -1, y.dtype)
    except Exception:  # noqa: BLE001 - older or renamed op: the same formula
        return y * (dy - (dy * y).sum(-1, keepdim=True))


def compare(got, ref, rtol, atol):
    """(max abs error, elements outside atol + rtol |ref|), NaN-aware."""
    g, r = got.double(), ref.double()
    err = (g - r).abs()
    nan_ok = torch.isnan(g) & torch.isnan(r)
    err = torch.where(nan_ok, torch.zeros_like(err), err)
    bad = ~(err <= atol + rtol * r.abs())
    finite = err[~torch.isnan(err)]
    worst = float(finite.max()) if finite.numel() else 0.0
    return worst, int(bad.sum())


def check_chunks(b, h, s, limit=1 << 26):
    """(first head, end head, first row, end row) blocks of about `limit`
    elements: whole heads when a head is small, row blocks of one head
    otherwise, so float64 copies stay a few GiB even at S = 16384."""
    if s * s <= limit:
        per = max(1, limit // (s * s))
        return [(i, min(b * h, i + per), 0, s) for i in range(0, b * h, per)]
    rows = max(1, limit // s)
    return [(i, i + 1, r, min(s, r + rows)) for i in range(b * h) for r in range(0, s, rows)]


def check_case(dt, mode, x, mask, tri, y, dy, dx):
    """Checks y and dx block by block against:
      forward:  softmax in float64 of the composition, cast to dt;
      backward: autograd's softmax backward in float64 from unifuse's own y
                (the library's contract: dx from y and dy), times scale,
                cast to dt; and, for information, the end-to-end float64
                autograd gradient of the composition at x (asserted for f32
                only: in f16/bf16 the rounding of y alone moves it past the
                tolerance where dy_i - sum(dy*y) cancels)."""
    _, rtol, atol = DTYPES[dt]
    tdt = x.dtype
    b, h, s, _ = x.shape
    xs, ys, dys, dxs = (t.view(b * h, s, s) for t in (x, y, dy, dx))
    fn = COMPOSITIONS[mode]
    out = {"forward": [0.0, 0], "backward": [0.0, 0], "backward_e2e": [0.0, 0]}

    def acc(key, res):
        out[key][0] = max(out[key][0], res[0])
        out[key][1] += res[1]

    for i0, i1, r0, r1 in check_chunks(b, h, s):
        m = None
        if mode == "mask":
            idx = torch.arange(i0, i1, device=x.device) // h
            m = mask.view(b, s, s)[:, r0:r1].index_select(0, idx).double()
        yc, dxc = ys[i0:i1, r0:r1], dxs[i0:i1, r0:r1]
        x64 = xs[i0:i1, r0:r1].double().requires_grad_(True)
        y64 = fn(x64, m, tri[r0:r1])
        acc("forward", compare(yc, y64.detach().to(tdt), rtol, atol))
        dy64 = dys[i0:i1, r0:r1].double()
        ref = (SCALE * softmax_backward_ref(dy64, yc.double())).to(tdt)
        acc("backward", compare(dxc, ref, rtol, atol))
        (g,) = torch.autograd.grad(y64, x64, dy64)
        acc("backward_e2e", compare(dxc, g.to(tdt), rtol, atol))
        del x64, y64, dy64, ref, g, m
    res = {k: {"max_abs_err": v[0], "bad": v[1]} for k, v in out.items()}
    res["forward"]["ok"] = res["forward"]["bad"] == 0
    res["backward"]["ok"] = res["backward"]["bad"] == 0
    res["backward_e2e"]["ok"] = res["backward_e2e"]["bad"] == 0
    res["backward_e2e"]["asserted"] = dt == "f32"
    return res


# --------------------------------------------------------------------------
# One configuration


def pick_shape(s, es, target):
    """[B,H,S,S] of about `target` bytes, at least one S x S head; H <= 16."""
    bh = max(1, target // (s * s * es))
    h = min(bh, 16)
    return [bh // h, h, s, s]


def run_config(uf, timer, args, dt, s, copy_gbps, results, checks, errors):
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dt]
    ufdt = DTYPES[dt][0]
    es = torch.empty((), dtype=tdt).element_size()
    shape = pick_shape(s, es, args.target_mib * MIB)
    b = shape[0]
    n = math.prod(shape)
    tensor_bytes = n * es
    mask_bytes = b * s * s * es
    gen = torch.Generator(device="cuda").manual_seed(1234 + s)
    x = (torch.rand(shape, device="cuda", generator=gen, dtype=torch.float32) * 16 - 8).to(tdt)
    dy = (torch.rand(shape, device="cuda", generator=gen, dtype=torch.float32) * 2 - 1).to(tdt)
    # Additive mask: mostly finite, one key in eight hidden (-inf), as a
    # padding mask would be; no row is entirely hidden at these S.
    u = torch.rand([b, 1, s, s], device="cuda", generator=gen)
    mask = torch.where(u < 0.125, torch.full_like(u, float("-inf")), -2 * u).to(tdt)
    del u
    tri = torch.ones(s, s, dtype=torch.bool, device="cuda").triu_(1)
    y = torch.empty_like(x)
    dx = torch.empty_like(x)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    ok = True

    for mode in MODES:
        if mode not in args.modes:
            continue
        d = uf.desc(shape, ufdt, causal=mode == "causal",
                    mask_shape=[b, 1, s, s] if mode == "mask" else None,
                    mask_dtype=ufdt if mode == "mask" else UF_DTYPE_NONE)
        dref = ctypes.byref(d)
        m = mask if mode == "mask" else None
        tag = "%s %s S=%d" % (dt, mode, s)

        def uf_fwd():
            uf.forward(dref, x, m, y, stream)

        def uf_bwd():
            uf.backward(dref, y, dy, dx, stream)

        # Correctness first: a wrong kernel's speed is not worth reporting.
        try:
            uf_fwd()
            uf_bwd()
            torch.cuda.synchronize()
            if not args.no_check:
                c = check_case(dt, mode, x, m, tri, y, dy, dx)
                c.update({"dtype": dt, "mode": mode, "shape": shape})
                checks.append(c)
                good = (c["forward"]["ok"] and c["backward"]["ok"]
                        and (c["backward_e2e"]["ok"] or dt != "f32"))
                ok &= good
                log("check %-22s fwd max|err| %.2e (%d bad)  bwd %.2e (%d bad)  "
                    "bwd end-to-end %.2e (%d bad%s)  %s"
                    % (tag, c["forward"]["max_abs_err"], c["forward"]["bad"],
                       c["backward"]["max_abs_err"], c["backward"]["bad"],
                       c["backward_e2e"]["max_abs_err"], c["backward_e2e"]["bad"],
                       "" if dt == "f32" else ", not asserted", "ok" if good else "FAILED"))
        except Exception as e:  # noqa: BLE001 - record, then go on
            ok = False
            errors.append({"what": "unifuse " + tag, "error": repr(e)})
            log("error: unifuse %s: %r" % (tag, e))
            continue

        fwd_bytes = 2 * tensor_bytes + (mask_bytes if mode == "mask" else 0)
        bwd_bytes = 3 * tensor_bytes

        def record(impl, op, fn):
            nbytes = fwd_bytes if op == "forward" else bwd_bytes
            entry = {"op": op, "impl": impl, "dtype": dt, "mode": mode, "shape": shape,
                     "bytes": nbytes, "ms": None, "gbps": None, "pct_of_copy": None}
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
            return entry

        row = {}
        row[("unifuse", "forward")] = record("unifuse", "forward", uf_fwd)
        row[("unifuse", "backward")] = record("unifuse", "backward", uf_bwd)

        # Eager and compiled PyTorch: forward without autograd; backward is
        # autograd's backward of the whole composition (softmax backward,
        # the scale, the masked_fill), kept alive with retain_graph.
        for impl in ("eager", "compile"):
            fn = COMPOSITIONS[mode]
            if impl == "compile":
                try:
                    fn = torch.compile(fn, dynamic=False)
                except Exception as e:  # noqa: BLE001
                    errors.append({"what": "torch.compile " + tag, "error": repr(e)})
                    log("error: torch.compile %s: %r" % (tag, e))
                    continue

            def fwd(fn=fn):
                with torch.no_grad():
                    fn(x, m, tri)

            row[(impl, "forward")] = record(impl, "forward", fwd)
            try:
                xg = x.detach().requires_grad_(True)
                yg = fn(xg, m, tri)
            except Exception as e:  # noqa: BLE001
                errors.append({"what": "%s backward graph %s" % (impl, tag), "error": repr(e)})
                log("error: %s backward graph %s: %r" % (impl, tag, e))
                continue

            def bwd(yg=yg, xg=xg):
                torch.autograd.grad(yg, xg, dy, retain_graph=True)

            row[(impl, "backward")] = record(impl, "backward", bwd)
            del xg, yg

        for op in ("forward", "backward"):
            cells = []
            for impl in ("unifuse", "eager", "compile"):
                e = row.get((impl, op))
                cells.append("%9.1f" % e["gbps"] if e and e["gbps"] else "%9s" % "-")
            u, ea = row.get(("unifuse", op)), row.get(("eager", op))
            speedup = (ea["ms"] / u["ms"]) if u and ea and u["ms"] and ea["ms"] else None
            log("%-8s %-5s %-6s %-20s %s %s %7s" % (
                op, dt, mode, "[%s]" % ",".join(map(str, shape)), " ".join(cells),
                "%6.1f%%" % u["pct_of_copy"] if u and u["pct_of_copy"] else "%7s" % "-",
                "%.2fx" % speedup if speedup else "-"))
    del x, dy, mask, tri, y, dx
    return ok


def measure_copy(timer, quick):
    """Device-to-device copy of a large tensor, bytes read + written."""
    nbytes = 1024 * MIB
    while nbytes >= 64 * MIB:
        try:
            a = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
            b = torch.empty_like(a)
            break
        except torch.cuda.OutOfMemoryError:
            nbytes //= 2
    else:
        return None, 0
    ms = timer(lambda: b.copy_(a), quick)
    del a, b
    return 2 * nbytes / (ms * 1e6), nbytes


# --------------------------------------------------------------------------
# Output


def plot(path, results, copy_gbps, dtypes, modes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(dtypes), len(modes), figsize=(5.2 * len(modes), 3.8 * len(dtypes)),
                             squeeze=False, sharex=True)
    colors = {"unifuse": "tab:blue", "eager": "tab:orange", "compile": "tab:green"}
    styles = {"forward": ("-", "o"), "backward": (":", "s")}
    for r, dt in enumerate(dtypes):
        for c, mode in enumerate(modes):
            ax = axes[r][c]
            for impl in ("unifuse", "eager", "compile"):
                for op in ("forward", "backward"):
                    pts = sorted((e["shape"][-1], e["gbps"]) for e in results
                                 if e["dtype"] == dt and e["mode"] == mode and e["impl"] == impl
                                 and e["op"] == op and e["gbps"])
                    if pts:
                        ls, mk = styles[op]
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=ls, marker=mk,
                                color=colors[impl], label="%s %s" % (impl, op))
            if copy_gbps:
                ax.axhline(copy_gbps, color="gray", linestyle="--", label="copy (ceiling)")
            ax.set_xscale("log", base=2)
            ax.set_title("%s, mode %s" % (dt, mode))
            ax.grid(True, alpha=0.3)
            if r == len(dtypes) - 1:
                ax.set_xlabel("S (row length)")
            if c == 0:
                ax.set_ylabel("effective GB/s")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=4, fontsize="small")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default="build-cuda/libunifuse-cuda.so",
                   help="the CUDA build's libunifuse-cuda.so (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    p.add_argument("--dtypes", default="f16,bf16,f32", help="comma list (fp16,bf16,fp32 or f16..)")
    p.add_argument("--sizes", default=None, help="comma list of S (default 512..16384)")
    p.add_argument("--modes", default="none,mask,causal")
    p.add_argument("--target-mib", type=int, default=256,
                   help="tensor size B*H*S*S is chosen near this (at least one S x S head)")
    p.add_argument("--no-check", action="store_true", help="time only")
    p.add_argument("--events", action="store_true", help="CUDA events even if triton is there")
    p.add_argument("--out-json", default="compare_torch.json")
    p.add_argument("--out-png", default="compare_torch.png")
    a = p.parse_args(argv)
    a.dtypes = [ALIASES.get(t, t) for t in a.dtypes.split(",") if t]
    for t in a.dtypes:
        if t not in DTYPES:
            p.error("unknown dtype %r" % t)
    if a.sizes:
        a.sizes = [int(v) for v in a.sizes.split(",") if v]
    else:
        a.sizes = [1024, 4096] if a.quick else [512, 1024, 2048, 4096, 16384]
    a.modes = [m for m in a.modes.split(",") if m]
    for m in a.modes:
        if m not in MODES:
            p.error("unknown mode %r" % m)
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if torch is None:
        log("PyTorch is not installed")
        return 1
    if not torch.cuda.is_available():
        log("no CUDA device visible to torch")
        return 1
    uf = Unifuse(os.path.abspath(args.lib))
    info = uf.device_info()
    if info.backend != UF_BACKEND_CUDA:
        log("%s is the %s build, not CUDA" % (args.lib, uf.lib.uf_backend_name(info.backend)))
        return 1
    try:  # torch.compile specialises per shape and dtype: allow them all
        import torch._dynamo as dynamo

        for knob in ("cache_size_limit", "recompile_limit"):
            if hasattr(dynamo.config, knob):
                setattr(dynamo.config, knob, 1024)
    except Exception:  # noqa: BLE001
        pass
    timer, timer_name = make_timer(args.events)
    try:
        import triton

        triton_version = triton.__version__
    except Exception:  # noqa: BLE001
        triton_version = None

    log("unifuse %s (%s) on %s; torch %s, triton %s" % (
        uf.version(), args.lib, info.name.decode(), torch.__version__, triton_version))
    log("timing: %s; scale %g; GB/s = effective bytes / time" % (timer_name, SCALE))
    copy_gbps, copy_bytes = measure_copy(timer, args.quick)
    if copy_gbps:
        log("copy: %d MiB device to device: %.1f GB/s (read + write)"
            % (copy_bytes // MIB, copy_gbps))
    log("%-8s %-5s %-6s %-20s %9s %9s %9s %7s %7s" % (
        "op", "dtype", "mode", "shape", "unifuse", "eager", "compile", "%copy", "vs eag"))

    results, checks, errors = [], [], []
    ok = True
    started = time.time()
    for dt in args.dtypes:
        for s in args.sizes:
            try:
                ok &= run_config(uf, timer, args, dt, s, copy_gbps, results, checks,
                                 errors)
            except torch.cuda.OutOfMemoryError as e:
                errors.append({"what": "%s S=%d" % (dt, s), "error": "out of memory: %r" % e})
                log("skipped %s S=%d: out of memory" % (dt, s))
            except Exception as e:  # noqa: BLE001 - keep the other sizes
                ok = False
                errors.append({"what": "%s S=%d" % (dt, s), "error": traceback.format_exc()})
                log("error: %s S=%d: %r" % (dt, s, e))
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
        "scale": SCALE,
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
        plot(args.out_png, results, copy_gbps, args.dtypes, args.modes)
        log("wrote %s" % args.out_png)
    except Exception as e:  # noqa: BLE001 - the numbers are in the JSON anyway
        log("plot failed: %r" % e)
    log("checks %s, %d errors recorded" % ("passed" if ok else "FAILED", len(errors)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
