#!/usr/bin/env python3
"""Compare unifuse's fused attention with PyTorch's scaled_dot_product_attention.

Loads the CUDA build of libunifuse through ctypes and calls
uf_attention_forward / uf_attention_backward on torch tensors q, k, v
[B, H, S, D] (on torch's current stream), in the cases of
bench/bench_attention.c: bf16 and f16 on B4 H16 S4096 D128 and B4 H32 S4096
D64, without a mask and causal; an fp32 additive bias [1, 1, S, S]
(bias_stride {0, 0, S, 1}); grouped-query attention (Hq 32, Hkv 8); f32 on
the first shape. For each case it

  * checks unifuse's out, log-sum-exp, dq, dk and dv against
    scaled_dot_product_attention in float64 (the explicit formula on a torch
    without it), head block by head block, and reports the largest absolute
    error. The same is measured for torch's own SDPA in the case's dtype; a
    quantity passes when unifuse's error is at most twice torch's plus the
    dtype's epsilon times the largest reference value (FlashAttention's
    tests use the same factor of two). Without a low-precision torch result
    the bound is eight epsilons times the largest reference value;
  * times, with CUDA events (median after warm-up), forward (no autograd)
    and forward + backward of unifuse and of SDPA restricted to each of the
    flash, efficient (memory-efficient) and cuDNN backends; a backend that
    refuses a case (flash takes no bias, none takes f32 but efficient, older
    torch has no cuDNN backend) is recorded as skipped with its reason. The
    bias case gives SDPA the bias as attn_mask in the query's dtype; GQA
    uses enable_gqa where torch has it and the backend takes it, else K and
    V repeated to Hq heads before the timing (recorded);
  * measures the matrix ceiling in the same run: torch.matmul of two bf16
    8192 x 8192 matrices, TFLOP/s, and gives every rate as a share of it;
  * writes a JSON file and a PNG bar chart (TFLOP/s per case, a bar per
    implementation; skipped, saying so, without matplotlib), and prints a
    table.

FLOPs as in bench/bench_attention.c: forward 4 * B * Hq * D * visible (i, j)
pairs (Sq * Sk, or the bottom-right causal count), forward + backward 3.5x
the forward (the backward's 2.5x: five matmuls, FlashAttention's benchmark
convention), whatever an implementation really computes.

--device cpu runs the same against the OpenMP build (--lib
build/libunifuse-openmp.so) and torch on the CPU, with wall-clock timing and
the tiny sizes by default: a check of the binding and the reference, not a
measurement.

Exit status: 0 when every check passes, 1 otherwise. A refusing or failing
torch backend is recorded, not fatal.
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
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import ALIASES, DTYPES, Unifuse, log  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --help and py_compile work without it
    torch = F = None

UF_DTYPE_NONE, UF_F32 = 0, 1
UF_BACKEND_CPU, UF_BACKEND_CUDA = 1, 2
OPS = ("forward", "fwd+bwd")
# FLOPs of a pass as multiples of the forward's.
FLOP_FACTOR = {"forward": 1.0, "fwd+bwd": 3.5}
TORCH_BACKENDS = ("flash", "efficient", "cudnn")
IMPLS = ("unifuse",) + TORCH_BACKENDS
SDP_NAMES = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
             "cudnn": "CUDNN_ATTENTION"}
VARIANTS = ("full", "causal", "bias", "gqa")
TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
# Machine epsilon of each dtype, for the error bound (module doc).
EPS = {"f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
# (B, H, S, D) of the two plain shapes and (B, Hq, Hkv, S, D) of the GQA
# one, as in bench/bench_attention.c.
SHAPE_SETS = {
    "gpu": {"plain": [(4, 16, 4096, 128), (4, 32, 4096, 64)], "gqa": (4, 32, 8, 4096, 128)},
    "cpu": {"plain": [(1, 4, 512, 64), (1, 8, 512, 32)], "gqa": (1, 8, 2, 512, 64)},
    "quick": {"plain": [(1, 2, 128, 64), (1, 4, 128, 32)], "gqa": (1, 4, 1, 128, 64)},
}
# The log-sum-exp's bound relative to max(|lse|, 1): it is accumulated in
# fp32 from the same rounded q and k as the reference, so it does not
# depend on the dtype; 1e-4 leaves room for long fp32 sums.
LSE_RTOL = 1e-4
# Float64 score elements per block of the reference check (512 MiB).
CHECK_LIMIT = 1 << 26
# Where tensors live: "cuda", or "cpu" with --device cpu.
DEVICE = "cuda"


class AttentionDesc(ctypes.Structure):
    """uf_attention_desc of src/unifuse/attention.h (C enums are int)."""

    _fields_ = [
        ("dtype", ctypes.c_int),
        ("batch", ctypes.c_int64),
        ("heads_q", ctypes.c_int64),
        ("heads_kv", ctypes.c_int64),
        ("seq_q", ctypes.c_int64),
        ("seq_k", ctypes.c_int64),
        ("head_dim", ctypes.c_int64),
        ("q_stride", ctypes.c_int64 * 3),
        ("k_stride", ctypes.c_int64 * 3),
        ("v_stride", ctypes.c_int64 * 3),
        ("o_stride", ctypes.c_int64 * 3),
        ("scale", ctypes.c_double),
        ("causal", ctypes.c_int),
        ("window_left", ctypes.c_int64),
        ("window_right", ctypes.c_int64),
        ("bias_dtype", ctypes.c_int),
        ("bias_stride", ctypes.c_int64 * 4),
        ("dropout_p", ctypes.c_double),
        ("seed", ctypes.c_uint64),
        ("offset", ctypes.c_uint64),
    ]


class UnifuseAttention(Unifuse):
    """The softmax binding (device info, statuses) plus the attention calls."""

    def __init__(self, path):
        super().__init__(path)
        # 248 bytes on x86-64: a mismatch means the binding left the header.
        if ctypes.sizeof(AttentionDesc) != 248 and ctypes.sizeof(ctypes.c_void_p) == 8:
            raise RuntimeError("AttentionDesc layout does not match uf_attention_desc")
        lib, vp, i64 = self.lib, ctypes.c_void_p, ctypes.c_int64
        desc_p = ctypes.POINTER(AttentionDesc)
        lib.uf_attention_desc_init.argtypes = [desc_p, ctypes.c_int] + [i64] * 6
        lib.uf_attention_forward.argtypes = [desc_p] + [vp] * 7
        lib.uf_attention_backward.argtypes = [desc_p] + [vp] * 12
        for name in ("uf_attention_desc_init", "uf_attention_forward", "uf_attention_backward"):
            getattr(lib, name).restype = ctypes.c_int

    def desc(self, cfg):
        """The descriptor of a case: contiguous [B, H, S, D] tensors, scale
        1/sqrt(D) (SDPA's default), causal or the broadcast fp32 bias."""
        d = AttentionDesc()
        s = cfg["seq"]
        self.check(self.lib.uf_attention_desc_init(
            ctypes.byref(d), DTYPES[cfg["dtype"]][0], cfg["batch"], cfg["heads_q"],
            cfg["heads_kv"], s, s, cfg["head_dim"]), "uf_attention_desc_init")
        d.causal = int(cfg["causal"])
        if cfg["bias"]:
            d.bias_dtype = UF_F32
            for i, v in enumerate((0, 0, s, 1)):
                d.bias_stride[i] = v
        return d

    def passes(self, cfg, t, stream):
        """(forward, forward + backward) callables on the tensors of t (see
        make_tensors); the descriptor lives on in the closures."""
        desc = self.desc(cfg)
        dref = ctypes.byref(desc)
        p = {k: (v.data_ptr() if v is not None else None) for k, v in t.items()}
        fwd_fn, bwd_fn = self.lib.uf_attention_forward, self.lib.uf_attention_backward

        def fwd():
            st = fwd_fn(dref, p["q"], p["k"], p["v"], p["bias"], p["out"], p["lse"], stream)
            if st:
                self.check(st, "uf_attention_forward")

        def fwd_bwd():
            fwd()
            st = bwd_fn(dref, p["q"], p["k"], p["v"], p["bias"], p["out"], p["lse"], p["dout"],
                        p["dq"], p["dk"], p["dv"], None, stream)
            if st:
                self.check(st, "uf_attention_backward")

        fwd.desc = fwd_bwd.desc = desc  # keeps the struct alive with the callables
        return fwd, fwd_bwd


# --------------------------------------------------------------------------
# Cases, FLOPs, inputs


def make_configs(set_name, dtypes, variants):
    """The cases of bench/bench_attention.c: bf16 and f16 full and causal
    on both plain shapes, bias on the first, gqa on the GQA shape; f32 full
    on the first shape only."""
    shapes = SHAPE_SETS[set_name]
    out = []

    def add(dt, variant, b, hq, hkv, s, d):
        if variant in variants:
            out.append({"dtype": dt, "variant": variant, "batch": b, "heads_q": hq,
                        "heads_kv": hkv, "seq": s, "head_dim": d,
                        "causal": variant == "causal", "bias": variant == "bias"})

    for dt in dtypes:
        b, h, s, d = shapes["plain"][0]
        if dt == "f32":
            add(dt, "full", b, h, h, s, d)
            continue
        for b, h, s, d in shapes["plain"]:
            add(dt, "full", b, h, h, s, d)
            add(dt, "causal", b, h, h, s, d)
        b, h, s, d = shapes["plain"][0]
        add(dt, "bias", b, h, h, s, d)
        add(dt, "gqa", *shapes["gqa"])
    return out


def label(cfg):
    heads = ("H%d" % cfg["heads_q"] if cfg["heads_q"] == cfg["heads_kv"]
             else "Hq%d Hkv%d" % (cfg["heads_q"], cfg["heads_kv"]))
    return "%s %s B%d %s S%d D%d" % (cfg["dtype"], cfg["variant"], cfg["batch"], heads,
                                     cfg["seq"], cfg["head_dim"])


def visible_pairs(sq, sk, causal):
    """The (i, j) whose logits count: all, or the causal rule's (bottom-
    right aligned: key j visible to query i when j <= i + Sk - Sq)."""
    if not causal:
        return sq * sk
    return sum(min(sk, max(0, i + sk - sq + 1)) for i in range(sq))


def forward_flops(cfg):
    return 4.0 * cfg["batch"] * cfg["heads_q"] * cfg["head_dim"] * visible_pairs(
        cfg["seq"], cfg["seq"], cfg["causal"])


def torch_dtype(dt):
    return getattr(torch, TORCH_DTYPES[dt])


def make_tensors(cfg, seed):
    """Inputs q, k, v, dout (normal: logits of standard deviation about 1,
    as FlashAttention's tests draw them) and bias (uniform [-1, 1), fp32
    [1, 1, S, S]); unifuse's outputs out, lse (fp32), dq, dk, dv."""
    tdt = torch_dtype(cfg["dtype"])
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    b, hq, hkv, s, d = (cfg[k] for k in ("batch", "heads_q", "heads_kv", "seq", "head_dim"))

    def normal(*shape):
        return torch.randn(shape, device=DEVICE, generator=gen).to(tdt)

    t = {"q": normal(b, hq, s, d), "k": normal(b, hkv, s, d), "v": normal(b, hkv, s, d),
         "dout": normal(b, hq, s, d), "bias": None}
    if cfg["bias"]:
        t["bias"] = torch.rand((1, 1, s, s), device=DEVICE, generator=gen) * 2 - 1
    t["out"], t["dq"] = torch.empty_like(t["q"]), torch.empty_like(t["q"])
    t["dk"], t["dv"] = torch.empty_like(t["k"]), torch.empty_like(t["v"])
    t["lse"] = torch.empty((b, hq, s), dtype=torch.float32, device=DEVICE)
    return t


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------------------------
# PyTorch's side


def has_sdpa():
    return F is not None and hasattr(F, "scaled_dot_product_attention")


def causal_mask(s, device, dtype):
    """0 where key j is visible to query i, -inf where the (bottom-right,
    here Sq == Sk) causal rule hides it."""
    hide = torch.ones(s, s, dtype=torch.bool, device=device).triu_(1)
    return torch.zeros(s, s, dtype=dtype, device=device).masked_fill_(hide, float("-inf"))


def attention_math(q, k, v, mask):
    """softmax(Q K^T / sqrt(D) + mask) V in q's dtype, and the row
    log-sum-exp: the reference where torch has no SDPA, and the lse."""
    s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = s + mask
    return torch.matmul(torch.softmax(s, -1), v), torch.logsumexp(s, -1)


def sdpa_low(q, k, v, cfg, mask_low, gqa):
    """SDPA in the case's dtype, whichever backend torch picks, or the
    explicit formula on a torch without SDPA. gqa: 'enable_gqa', or
    'expand' (K and V repeated to Hq heads first)."""
    if gqa == "expand":
        g = cfg["heads_q"] // cfg["heads_kv"]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    if not has_sdpa():
        mask = mask_low
        if cfg["causal"]:
            c = causal_mask(cfg["seq"], q.device, q.dtype)
            mask = c if mask is None else mask + c
        return attention_math(q, k, v, mask)[0]
    kw = {"attn_mask": mask_low, "is_causal": bool(cfg["causal"])}
    if gqa == "enable_gqa":
        kw["enable_gqa"] = True
    return F.scaled_dot_product_attention(q, k, v, **kw)


def sdpa_context(backend):
    """A context manager that restricts SDPA to one backend; raises
    RuntimeError when this torch cannot."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        sdpa_kernel = None
    if sdpa_kernel is not None:
        if not hasattr(SDPBackend, SDP_NAMES[backend]):
            raise RuntimeError("torch %s has no SDPBackend.%s" % (torch.__version__,
                                                                   SDP_NAMES[backend]))
        return sdpa_kernel(getattr(SDPBackend, SDP_NAMES[backend]))
    if backend == "cudnn" or not hasattr(torch.backends.cuda, "sdp_kernel"):
        raise RuntimeError("torch %s cannot select the %s backend" % (torch.__version__,
                                                                       backend))
    return torch.backends.cuda.sdp_kernel(enable_flash=backend == "flash",
                                          enable_mem_efficient=backend == "efficient",
                                          enable_math=False)


def gqa_modes(cfg):
    """How SDPA is given grouped heads, in the order tried."""
    if cfg["heads_q"] == cfg["heads_kv"]:
        return [None]
    return ["enable_gqa", "expand"]


def torch_passes(cfg, t, gqa):
    """(forward, forward + backward) of SDPA on t's inputs, under whatever
    backend restriction is active. gqa 'expand': K and V repeated here,
    outside the timed calls."""
    q, k, v, dout = t["q"], t["k"], t["v"], t["dout"]
    mask = t["bias"].to(q.dtype) if t["bias"] is not None else None
    if gqa == "expand":
        g = cfg["heads_q"] // cfg["heads_kv"]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    kw = {"attn_mask": mask, "is_causal": bool(cfg["causal"])}
    if gqa == "enable_gqa":
        kw["enable_gqa"] = True

    def fwd():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, **kw)

    def fwd_bwd():
        leaves = [x.detach().requires_grad_(True) for x in (q, k, v)]
        out = F.scaled_dot_product_attention(*leaves, **kw)
        torch.autograd.grad(out, leaves, dout)

    return fwd, fwd_bwd


# --------------------------------------------------------------------------
# Checks


def check_case(cfg, t):
    """Largest absolute errors of unifuse (out, lse, dq, dk, dv) and of
    torch's own low-precision SDPA (out, dq, dk, dv) against float64, block
    of key/value heads by block; the bounds of the module doc."""
    dt = cfg["dtype"]
    b_n, hq, hkv, s = cfg["batch"], cfg["heads_q"], cfg["heads_kv"], cfg["seq"]
    g = hq // hkv
    names = ("out", "lse", "dq", "dk", "dv")
    err = {k: 0.0 for k in names}
    terr = {k: 0.0 for k in names if k != "lse"}
    ref_max = {k: 0.0 for k in names}

    # Torch's low-precision result on the whole tensors, once.
    low, low_note = None, None
    try:
        gqa = None
        if hq != hkv:
            gqa = "expand"  # the reference needs gradients, not speed
        leaves = [t[x].detach().requires_grad_(True) for x in ("q", "k", "v")]
        mask_low = t["bias"].to(leaves[0].dtype) if t["bias"] is not None else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            o = sdpa_low(*leaves, cfg, mask_low, gqa)
            grads = torch.autograd.grad(o, leaves, t["dout"])
        low = {"out": o.detach(), "dq": grads[0], "dk": grads[1], "dv": grads[2]}
        del o, grads, leaves
    except Exception as e:  # noqa: BLE001 - e.g. f16 matmul on an old CPU torch
        low_note = "no low-precision torch result: %r" % e

    per = max(1, CHECK_LIMIT // (g * s * s))  # key/value heads per block
    mask64 = None
    if cfg["bias"]:
        mask64 = t["bias"].double()[0, 0]
    if cfg["causal"]:
        c = causal_mask(s, t["q"].device, torch.float64)
        mask64 = c if mask64 is None else mask64 + c
    for b in range(b_n):
        for h0 in range(0, hkv, per):
            h1 = min(hkv, h0 + per)
            qs = slice(h0 * g, h1 * g)
            q64 = t["q"][b, qs].double().requires_grad_(True)
            k64 = t["k"][b, h0:h1].double().requires_grad_(True)
            v64 = t["v"][b, h0:h1].double().requires_grad_(True)
            ke, ve = k64.repeat_interleave(g, 0), v64.repeat_interleave(g, 0)
            if has_sdpa():
                o64 = F.scaled_dot_product_attention(q64, ke, ve, attn_mask=mask64)
                with torch.no_grad():
                    lse64 = attention_math(q64, ke, ve, mask64)[1]
            else:
                o64, lse64 = attention_math(q64, ke, ve, mask64)
            gq, gk, gv = torch.autograd.grad(o64, (q64, k64, v64), t["dout"][b, qs].double())
            ref = {"out": o64.detach(), "lse": lse64.detach(), "dq": gq, "dk": gk, "dv": gv}
            mine = {"out": t["out"][b, qs], "lse": t["lse"][b, qs], "dq": t["dq"][b, qs],
                    "dk": t["dk"][b, h0:h1], "dv": t["dv"][b, h0:h1]}
            for k in names:
                r = ref[k]
                err[k] = max(err[k], float((mine[k].double() - r).abs().max()))
                ref_max[k] = max(ref_max[k], float(r.abs().max()))
                if low is not None and k in terr:
                    lo = low[k][b, h0:h1] if k in ("dk", "dv") else low[k][b, qs]
                    terr[k] = max(terr[k], float((lo.double() - r).abs().max()))
            del q64, k64, v64, ke, ve, o64, lse64, gq, gk, gv, ref
    res = {"note": low_note} if low_note else {}
    ok = True
    for k in names:
        e = {"max_abs_err": err[k], "ref_max_abs": ref_max[k]}
        if k == "lse":
            # fp32 sums of products of the same rounded inputs as the
            # reference, whatever the dtype: a relative bound.
            bound = LSE_RTOL * max(ref_max[k], 1.0)
        elif low is not None:
            e["torch_max_abs_err"] = terr[k]
            bound = 2 * terr[k] + EPS[dt] * ref_max[k]
        else:
            bound = 8 * EPS[dt] * ref_max[k]
        e["bound"] = bound
        e["ok"] = bool(err[k] <= bound)  # NaN fails
        ok &= e["ok"]
        res[k] = e
    res["ok"] = bool(ok)
    return res


def check_summary(c):
    parts = []
    for k in ("out", "lse", "dq", "dk", "dv"):
        e = c[k]
        parts.append("%s %.2e%s" % (k, e["max_abs_err"], " (torch %.2e)" % e["torch_max_abs_err"]
                                    if "torch_max_abs_err" in e else ""))
    return "  ".join(parts)


# --------------------------------------------------------------------------
# Timing


def make_timer(iters, budget_ms):
    """timer(fn) -> (median ms, timed calls): CUDA events around each call
    on a GPU, the wall clock on the CPU (where calls are synchronous), after
    3 warm-up calls. When the calls would take longer than budget_ms in
    all, fewer (at least 5) are timed, so that a slow case cannot hold the
    GPU for minutes."""

    def one(fn):
        if DEVICE == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b)
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3

    def timer(fn):
        for _ in range(2):
            fn()
        est = one(fn)
        n = iters
        if budget_ms and est * iters > budget_ms:
            n = max(5, int(budget_ms / max(est, 1e-6)))
        if DEVICE == "cuda":
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            for i in range(n):
                starts[i].record()
                fn()
                ends[i].record()
            torch.cuda.synchronize()
            t = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
        else:
            t = sorted(one(fn) for _ in range(n))
        return (t[n // 2] if n % 2 else 0.5 * (t[n // 2 - 1] + t[n // 2])), n

    return timer


def measure_matmul(timer, n, dt):
    """TFLOP/s of torch.matmul of two n x n matrices of dtype dt (2 n^3
    FLOPs a call): the matrix rate the attention rates are compared with."""
    tdt = torch_dtype(dt)
    a = torch.randn(n, n, device=DEVICE).to(tdt)
    b = torch.randn(n, n, device=DEVICE).to(tdt)
    c = torch.empty_like(a)
    ms, _ = timer(lambda: torch.matmul(a, b, out=c))
    del a, b, c
    return 2.0 * n ** 3 / (ms * 1e9)


class Recorder:
    """Times callables into JSON entries; failures and refusals are
    recorded, not raised."""

    def __init__(self, timer, matmul_tflops, rate_unit):
        self.timer, self.matmul, self.unit = timer, matmul_tflops, rate_unit
        self.results, self.errors = [], []
        self.said = set()

    def error(self, what, e):
        self.errors.append({"what": what, "error": repr(e)})
        log("error: %s: %r" % (what, e))

    def entry(self, cfg, impl, op, **extra):
        e = dict(cfg, impl=impl, op=op, flops=forward_flops(cfg) * FLOP_FACTOR[op], ms=None,
                 iters=None, tflops=None, pct_of_matmul=None)
        e.update(extra)
        self.results.append(e)
        return e

    def record(self, row, cfg, impl, op, fn, **extra):
        e = self.entry(cfg, impl, op, **extra)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ms, n = self.timer(fn)
            tflops = e["flops"] / (ms * 1e9)
            e.update(ms=ms, iters=n, tflops=tflops,
                     pct_of_matmul=100 * tflops / self.matmul if self.matmul else None)
        except Exception as ex:  # noqa: BLE001
            e["error"] = repr(ex)
            self.error("%s %s %s" % (impl, op, label(cfg)), ex)
        row[(impl, op)] = e

    def skipped(self, row, cfg, impl, reason, every_case=False):
        for op in OPS:
            row[(impl, op)] = self.entry(cfg, impl, op, skipped=reason)
        # A reason that holds for every case (an old torch) is said once.
        if not every_case or reason not in self.said:
            self.said.add(reason)
            log("  %s skipped for %s: %s" % (impl, label(cfg), reason))

    def torch_backend(self, row, cfg, t, backend):
        """SDPA restricted to `backend`: tried once, then timed; a refusal
        (no kernel for this case) is recorded as skipped with its reason."""
        if not has_sdpa():
            self.skipped(row, cfg, backend, "torch %s has no scaled_dot_product_attention"
                         % torch.__version__, every_case=True)
            return
        reasons = []
        for gqa in gqa_modes(cfg):
            try:
                ctx = sdpa_context(backend)
            except RuntimeError as e:
                self.skipped(row, cfg, backend, str(e), every_case=True)
                return
            with ctx:
                fwd, fwd_bwd = torch_passes(cfg, t, gqa)
                # torch says why a backend declines in warnings, then raises.
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        fwd()
                        fwd_bwd()
                        sync()
                        failed = None
                    except (RuntimeError, TypeError, NotImplementedError) as e:
                        failed = e
                if failed is not None:
                    why = [str(w.message).strip().split("\n")[0][:200] for w in caught][:3]
                    why.append(str(failed).strip().split("\n")[0][:200])
                    reasons.append("%s%s" % ("%s: " % gqa if gqa else "", "; ".join(why)))
                    continue
                extra = {"gqa_mode": gqa} if gqa else {}
                if cfg["bias"]:
                    extra["attn_mask"] = "bias in %s (the query's dtype)" % cfg["dtype"]
                self.record(row, cfg, backend, "forward", fwd, **extra)
                self.record(row, cfg, backend, "fwd+bwd", fwd_bwd, **extra)
                return
        self.skipped(row, cfg, backend, "refused: " + " | ".join(reasons))


def print_row(row, cfg, unit_name, unit):
    for op in OPS:
        cells = []
        for impl in IMPLS:
            e = row.get((impl, op))
            cells.append("%9.2f" % (e["tflops"] * 1e12 / unit) if e and e["tflops"]
                         else "%9s" % ("skip" if e and e.get("skipped") else "-"))
        u = row.get(("unifuse", op))
        pct = "%6.1f%%" % u["pct_of_matmul"] if u and u["pct_of_matmul"] else "%7s" % "-"
        log("%-8s %-38s %s %s" % (op, label(cfg), " ".join(cells), pct))


# --------------------------------------------------------------------------
# Output


def plot(path, results, matmul_tflops, unit_name, unit):
    """Bars of the rate per case, a panel per pass, a bar per
    implementation, the matmul ceiling as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"unifuse": "tab:blue", "flash": "tab:orange", "efficient": "tab:green",
              "cudnn": "tab:red"}
    cases = []
    for e in results:
        if label(e) not in cases:
            cases.append(label(e))
    fig, axes = plt.subplots(len(OPS), 1, figsize=(max(8, 1.3 * len(cases)), 4.2 * len(OPS)),
                             squeeze=False)
    width = 0.8 / len(IMPLS)
    for r, op in enumerate(OPS):
        ax = axes[r][0]
        for k, impl in enumerate(IMPLS):
            vals = {label(e): (e["tflops"] or 0) * 1e12 / unit for e in results
                    if e["op"] == op and e["impl"] == impl}
            ax.bar([i + (k - 1.5) * width for i in range(len(cases))],
                   [vals.get(c, 0) for c in cases], width, color=colors[impl], label=impl)
        if matmul_tflops:
            ax.axhline(matmul_tflops * 1e12 / unit, color="gray", linestyle="--",
                       label="torch.matmul (ceiling)")
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([c.replace(" B", "\nB", 1) for c in cases], fontsize="x-small")
        ax.set_title("%s (missing bar: skipped or failed, see the JSON)" % op)
        ax.set_ylabel(unit_name)
        ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize="small")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", default=None,
                   help="the build's library (default: build-cuda/libunifuse-cuda.so, with "
                        "--device cpu build/libunifuse-openmp.so)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cuda (default), or cpu: the OpenMP build against torch on the CPU")
    p.add_argument("--quick", action="store_true", help="the tiny sizes, 10 timed calls")
    p.add_argument("--set", choices=sorted(SHAPE_SETS), default=None,
                   help="sizes (default gpu; quick with --quick or --device cpu)")
    p.add_argument("--dtypes", default="bf16,f16,f32", help="comma list (default: %(default)s)")
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help="comma list (default: %(default)s)")
    p.add_argument("--iters", type=int, default=None, help="timed calls (default 30)")
    p.add_argument("--budget-s", type=float, default=3.0,
                   help="seconds one measurement may take before it times fewer calls "
                        "(at least 5; 0: no limit; default %(default)s)")
    p.add_argument("--matmul-size", type=int, default=None,
                   help="n of the n x n x n matmul ceiling (default 8192; 1024 on the CPU)")
    p.add_argument("--no-check", action="store_true", help="time only")
    p.add_argument("--out", default=None,
                   help="folder for compare_torch_attention.json and .png (default: here)")
    p.add_argument("--out-json", default=None, help="the JSON file (overrides --out)")
    p.add_argument("--out-png", default=None, help="the plot ('' for none; overrides --out)")
    a = p.parse_args(argv)
    if a.lib is None:
        a.lib = "build/libunifuse-openmp.so" if a.device == "cpu" else \
            "build-cuda/libunifuse-cuda.so"
    a.dtypes = [ALIASES.get(t, t) for t in a.dtypes.split(",") if t]
    for t in a.dtypes:
        if t not in DTYPES:
            p.error("unknown dtype %r" % t)
    a.variants = [v for v in a.variants.split(",") if v]
    for v in a.variants:
        if v not in VARIANTS:
            p.error("unknown variant %r (known: %s)" % (v, ", ".join(VARIANTS)))
    if a.set is None:
        a.set = "quick" if a.quick or a.device == "cpu" else "gpu"
    if a.iters is None:
        a.iters = 10 if a.quick else 30
    if a.iters < 1:
        p.error("--iters must be positive")
    if a.matmul_size is None:
        a.matmul_size = 1024 if a.device == "cpu" else 8192
    base = os.path.join(a.out or ".", "compare_torch_attention")
    if a.out_json is None:
        a.out_json = base + ".json"
    if a.out_png is None:
        a.out_png = base + ".png"
    return a


def setup(args):
    """(binding, device info) after checking that the library is the
    build for the chosen device; None with a message when it cannot run."""
    if torch is None:
        log("PyTorch is not installed")
        return None
    if args.device == "cuda" and not torch.cuda.is_available():
        log("no CUDA device visible to torch")
        return None
    uf = UnifuseAttention(os.path.abspath(args.lib))
    info = uf.device_info()
    want = UF_BACKEND_CUDA if args.device == "cuda" else UF_BACKEND_CPU
    if info.backend != want:
        log("%s is the %s build, not the one for --device %s"
            % (args.lib, uf.lib.uf_backend_name(info.backend).decode(), args.device))
        return None
    return uf, info


def release():
    if DEVICE == "cuda":
        torch.cuda.empty_cache()


def run_config(uf, rec, args, cfg, checks, unit_name, unit):
    t = make_tensors(cfg, 2026 + cfg["seq"] + cfg["head_dim"])
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream) if DEVICE == "cuda" \
        else None
    tag = label(cfg)
    fwd, fwd_bwd = uf.passes(cfg, t, stream)
    ok = True
    if not args.no_check:
        # Correctness first: a wrong kernel's speed is not worth reporting.
        try:
            fwd_bwd()
            sync()
            c = check_case(cfg, t)
        except Exception as e:  # noqa: BLE001 - record, then go on
            rec.error("unifuse " + tag, e)
            return False
        c.update(cfg)
        checks.append(c)
        ok = c["ok"]
        log("check %s: %s  %s" % (tag, check_summary(c), "ok" if ok else "FAILED"))
    row = {}
    rec.record(row, cfg, "unifuse", "forward", fwd)
    rec.record(row, cfg, "unifuse", "fwd+bwd", fwd_bwd)
    for backend in TORCH_BACKENDS:
        rec.torch_backend(row, cfg, t, backend)
    print_row(row, cfg, unit_name, unit)
    del t
    return ok


def main(argv=None):
    global DEVICE
    args = parse_args(sys.argv[1:] if argv is None else argv)
    DEVICE = args.device
    s = setup(args)
    if s is None:
        return 1
    uf, info = s
    cpu = args.device == "cpu"
    unit_name, unit = ("GFLOP/s", 1e9) if cpu else ("TFLOP/s", 1e12)
    timer = make_timer(args.iters, args.budget_s * 1e3)
    timer_name = "%s (median of %d after 3 warm-up calls; fewer, at least 5, past %g s)" % (
        "wall clock" if cpu else "CUDA events", args.iters, args.budget_s)
    log("unifuse %s (%s) on %s; torch %s" % (uf.version(), args.lib, info.name.decode(),
                                             torch.__version__))
    log("timing: %s; FLOPs: forward 4*B*Hq*D*visible pairs, fwd+bwd 3.5x forward (backward "
        "2.5x: five matmuls, FlashAttention's convention)" % timer_name)
    mm_dt = "f32" if cpu else "bf16"
    matmul_tflops = None
    try:
        matmul_tflops = measure_matmul(timer, args.matmul_size, mm_dt)
        log("ceiling: torch.matmul %s %d^3: %.2f %s" % (
            mm_dt, args.matmul_size, matmul_tflops * 1e12 / unit, unit_name))
    except Exception as e:  # noqa: BLE001 - the rates stand without it
        log("ceiling: torch.matmul failed: %r" % e)
    log("%-8s %-38s %s %7s" % ("op", "case", " ".join("%9s" % i for i in IMPLS), "%mm"))

    rec = Recorder(timer, matmul_tflops, unit)
    checks = []
    ok = True
    started = time.time()
    for cfg in make_configs(args.set, args.dtypes, args.variants):
        try:
            ok &= run_config(uf, rec, args, cfg, checks, unit_name, unit)
        except Exception as e:  # noqa: BLE001 - keep the other cases
            oom = DEVICE == "cuda" and isinstance(e, torch.cuda.OutOfMemoryError)
            rec.errors.append({"what": label(cfg), "error": traceback.format_exc()})
            log("%s %s:\n%s" % ("skipped (out of memory)" if oom else "error:", label(cfg),
                                traceback.format_exc()))
            ok &= oom
        release()

    plot_note = None
    if args.out_png:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            plot_note = "skipped: matplotlib is not installed"
    out = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": info.name.decode(), "backend": "openmp" if cpu else "cuda",
        "unifuse_version": uf.version(), "torch_version": torch.__version__,
        "timer": timer_name, "iters": args.iters, "set": args.set,
        "flop_rule": "forward 4*B*Hq*D*visible (i, j) pairs (two matmuls; causal counts the "
                     "bottom-right visible pairs); fwd+bwd 3.5 x forward (backward 2.5 x: five "
                     "matmuls, FlashAttention's benchmark convention)",
        "rate_unit": "tflops is TFLOP/s in every entry",
        "matmul_ceiling": {"dtype": mm_dt, "n": args.matmul_size, "tflops": matmul_tflops},
        "check_rule": "max abs error against float64 SDPA; ok when at most 2 x torch's own "
                      "low-precision error + eps(dtype) x max |reference| (lse: 1e-4 x "
                      "max(|lse|, 1), any dtype; no torch result: 8 eps(dtype) x max |reference|)",
        "notes": ["torch's causal is top-left aligned; every case has Sq == Sk, where it "
                  "equals unifuse's bottom-right rule",
                  "the bias case gives torch the bias as attn_mask in the query's dtype; "
                  "unifuse reads it in fp32"],
        "plot": plot_note or (args.out_png or "none"),
        "seconds": round(time.time() - started, 1),
        "results": rec.results, "checks": checks, "errors": rec.errors, "ok": bool(ok),
    }
    for path in (args.out_json, args.out_png):
        if path and os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(args.out_json, "w") as f:
        json.dump(out, f, indent=1)
    log("wrote %s" % args.out_json)
    if plot_note:
        log("plot %s" % plot_note)
    elif args.out_png:
        try:
            plot(args.out_png, rec.results, matmul_tflops, unit_name, unit)
            log("wrote %s" % args.out_png)
        except Exception as e:  # noqa: BLE001 - the numbers are in the JSON anyway
            log("plot failed: %r" % e)
    log("checks %s, %d errors recorded" % ("passed" if ok else "FAILED", len(rec.errors)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
