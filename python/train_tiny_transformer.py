#!/usr/bin/env python3
"""Train a tiny transformer on a synthetic copy task with unifuse's
softmax, LayerNorms and linear-layer epilogues (bias + dropout + residual,
bias + GELU), or, with --reference, PyTorch's own ops; in eager mode or
under torch.compile, on one process or several (DistributedDataParallel:
NCCL on GPUs, gloo on the CPU).

Each sequence is random tokens followed by the same tokens again; the
loss counts the second half only, which a model can learn to predict
exactly. Data come from a generator seeded by (seed, step) and the global
batch is split across processes, so for a given --batch the loss curve
does not depend on the number of processes (up to rounding; dropout draws
differ).

  python3 train_tiny_transformer.py --steps 300
  python3 train_tiny_transformer.py --reference --dropout 0 --json ref.json
  python3 train_tiny_transformer.py --nproc 2            # spawns 2 processes
  torchrun --nproc-per-node 2 train_tiny_transformer.py  # or torchrun's
"""

import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # unifuse_torch beside us

from tiny_transformer import TinyTransformer  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=16, help="global batch, split over processes")
    p.add_argument("--half", type=int, default=8, help="tokens before the copy (seq = 2 x half)")
    p.add_argument("--vocab", type=int, default=16)
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1,
                   help="dropout probability on the attention and MLP outputs")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--reference", action="store_true", help="PyTorch ops only, no unifuse")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--device", default="auto",
                   help="cpu, cuda, or auto: the unifuse library's device (cuda for the CUDA "
                        "build; cpu for OpenMP, and for --reference when no GPU is seen)")
    p.add_argument("--nproc", type=int, default=1, help="processes to spawn (1: none)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch (and so libunifuse's OpenMP) threads per process; 0: 1 on the "
                        "CPU, where this model is too small to gain from more, and where busy "
                        "cores make every parallel region wait")
    p.add_argument("--json", help="write a summary here (rank 0)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="after training, profile N more steps with torch.profiler and print "
                        "the ops by host time (rank 0)")
    a = p.parse_args(argv)
    if a.d_model % a.heads:
        p.error("--d-model must be a multiple of --heads")
    return a


def pick_device(args):
    if args.device != "auto":
        return args.device
    if not args.reference:
        from unifuse_torch import _device, library

        return _device.device_type(library())
    return "cuda" if torch.cuda.is_available() else "cpu"


def batch(args, step, rank, world, device):
    """This process's share of the global batch of `step`."""
    gen = torch.Generator().manual_seed(args.seed * 1_000_003 + step)
    first = torch.randint(0, args.vocab, (args.batch, args.half), generator=gen)
    tokens = torch.cat([first, first], 1)
    share = args.batch // world
    return tokens[rank * share:(rank + 1) * share].to(device)


def loss_fn(logits, tokens, half):
    """Next-token loss on the copied half (positions half-1 .. 2*half-2
    predict tokens half .. 2*half-1)."""
    pred = logits[:, half - 1:-1]
    return F.cross_entropy(pred.reshape(-1, pred.shape[-1]), tokens[:, half:].reshape(-1))


def train(rank, world, args):
    device = pick_device(args)
    if device == "cuda":
        device = "cuda:%d" % int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(device)
    torch.manual_seed(args.seed)  # the same initial weights on every process
    model = TinyTransformer(args.vocab, 2 * args.half, args.d_model, args.heads, args.layers,
                            args.dropout, args.reference).to(device)
    kernels = model.kernels
    torch.manual_seed(args.seed + 1 + rank)  # dropout draws: their own on each process
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[torch.device(device).index] if device.startswith("cuda") else None)
    if args.compile:
        if not hasattr(torch, "compile"):
            raise SystemExit("--compile needs torch >= 2.0 (this is %s)" % torch.__version__)
        model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    say = print if rank == 0 else (lambda *a, **k: None)
    say("model: %s softmax, %s norms, %s epilogues (dropout %g); %d process(es) on %s; torch %s%s"
        % (kernels["softmax"], kernels["norm"], kernels["epilogue"], args.dropout, world, device,
           torch.__version__, ", compiled" if args.compile else ""), flush=True)

    losses, started, warm = [], time.perf_counter(), None
    warmup = min(5, max(args.steps - 1, 0))  # first steps (compilation) left out of the rate
    for step in range(1, args.steps + 1):
        tokens = batch(args, step, rank, world, device)
        loss = loss_fn(model(tokens), tokens, args.half)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.detach()
        if world > 1:
            dist.all_reduce(value)
            value = value / world
        losses.append(float(value))
        if step == warmup:
            warm = time.perf_counter()
        if step % args.log_every == 0 or step == args.steps:
            elapsed = time.perf_counter() - started
            say("step %5d  loss %.5f  %.1f steps/s" % (step, losses[-1], step / elapsed),
                flush=True)
    end = time.perf_counter()
    if args.profile and rank == 0:
        profile_steps(model, opt, args, device, world)
    timed = args.steps - warmup
    rate = timed / (end - warm) if warm is not None and timed > 0 else args.steps / (end - started)
    summary = {
        "kernels": kernels,
        "reference": args.reference,
        "compile": args.compile,
        "world_size": world,
        "device": device,
        "torch": torch.__version__,
        "steps": args.steps,
        "losses": losses,
        "final_loss": losses[-1] if losses else None,
        "steps_per_s": rate,
        "seconds": end - started,
        "args": vars(args),
    }
    if not args.reference:
        from unifuse_torch import library

        summary["unifuse"] = {"version": library().version, "library": library().path,
                              "backend": library().backend_name}
    say("done: %d steps, final loss %.5f, %.1f steps/s (after %d warm-up steps)"
        % (args.steps, losses[-1], rate, warmup), flush=True)
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return summary


def profile_steps(model, opt, args, device, world):
    """Where a step's host time goes: unifuse's calls go through Python
    (ctypes, and torch.library on PyTorch >= 2.4), PyTorch's own ops do not."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        for step in range(args.profile):
            tokens = batch(args, args.steps + 1 + step, 0, world, device)
            loss = loss_fn(model(tokens), tokens, args.half)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25), flush=True)


def set_threads(args):
    # torch and libunifuse share one OpenMP runtime: this sets both.
    n = args.threads or 1
    torch.set_num_threads(n)
    return n


def worker(rank, world, args, port):
    """A process started by --nproc: join the local group, train."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    run_distributed(args)


def run_distributed(args):
    world = int(os.environ["WORLD_SIZE"])
    rank = int(os.environ["RANK"])
    if args.batch % world:
        raise SystemExit("--batch %d does not split over %d processes" % (args.batch, world))
    set_threads(args)
    gpu = pick_device(args) == "cuda"
    dist.init_process_group("nccl" if gpu else "gloo", rank=rank, world_size=world)
    try:
        train(rank, world, args)
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1:
        run_distributed(args)  # started by torchrun
    elif args.nproc > 1:
        # The OpenMP runtime reads this when the library loads in each child.
        os.environ.setdefault("OMP_NUM_THREADS", str(set_threads(args)))
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # all processes are on this host
        import torch.multiprocessing as mp

        mp.spawn(worker, args=(args.nproc, args, free_port()), nprocs=args.nproc)
    else:
        set_threads(args)
        train(0, 1, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
