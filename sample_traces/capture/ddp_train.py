"""A small PyTorch DDP (Gloo, CPU) or Horovod job that writes every rank's profiler trace and its own ground truth.

Run by :mod:`sample_traces.capture.ranks` under ``torch.distributed.run`` (DDP) or ``horovodrun --gloo``
(``--horovod``). Each rank profiles its steps with ``torch.profiler`` (a schedule of ``--skip`` steps
not recorded, one warm-up step, then ``--steps`` active steps), writes its Kineto trace through
``tensorboard_trace_handler`` (``<worker>.<time_ns>.pt.trace.json``; the worker name is PyTorch's
default ``<host>_<pid>`` unless ``--worker-names``) and times each step itself into
``steps_rank<R>.csv``: ``rank,step,step_time_s,start_epoch_us,end_epoch_us,sleep_s``, where ``step``
is the profiler's step number (``ProfilerStep#<step>`` in the trace).
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import torch
from sleeps import sleeps  # this folder: the script runs as a script
from torch import nn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30, help="active (recorded) steps")
    ap.add_argument("--skip", type=int, default=1, help="steps run before the profiler's warm-up step")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--sleep-rank", type=int, default=-1)
    ap.add_argument("--sleep-s", type=float, default=0.0)
    ap.add_argument("--sleep-from", type=int, default=0)
    ap.add_argument("--sleep-to", type=int, default=-1)
    ap.add_argument("--sleep-every", type=int, default=1)
    ap.add_argument("--sleep-all", action="store_true")
    ap.add_argument("--sleep-in", choices=["compute", "data"], default="compute", help="where the sleep happens")
    ap.add_argument("--imbalance-rank", type=int, default=-1, help="rank that computes a larger batch")
    ap.add_argument("--imbalance-x", type=int, default=3, help="... this many times larger")
    ap.add_argument("--horovod", action="store_true")
    ap.add_argument("--worker-names", action="store_true", help="name traces rank<R> instead of <host>_<pid>")
    ap.add_argument("--out", default=".")
    args = ap.parse_args()

    torch.manual_seed(1234)
    torch.set_num_threads(1)
    model: nn.Module = nn.Sequential(nn.Linear(args.width, args.width), nn.ReLU(), nn.Linear(args.width, 10))
    if args.horovod:
        import horovod.torch as hvd

        hvd.init()
        rank = hvd.rank()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    else:
        import torch.distributed as dist

        dist.init_process_group("gloo")
        rank = dist.get_rank()
        model = nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = args.batch * (args.imbalance_x if rank == args.imbalance_rank else 1)
    x, y = torch.randn(batch, args.width), torch.randint(0, 10, (batch,))
    loss_fn = nn.CrossEntropyLoss()
    out_dir = Path(args.out)
    handler = torch.profiler.tensorboard_trace_handler(
        str(out_dir / "traces"), worker_name=f"rank{rank}" if args.worker_names else None
    )
    schedule = torch.profiler.schedule(wait=args.skip, warmup=1, active=args.steps, repeat=1)
    rows: list[tuple[object, ...]] = []
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule, on_trace_ready=handler
    ) as prof:
        for i in range(args.skip + 1 + args.steps):
            step = i - args.skip - 1  # the active steps are 0..steps-1
            t0 = time.time()
            slept = args.sleep_s if step >= 0 and sleeps(args, rank, step) else 0.0
            if slept and args.sleep_in == "data":
                with torch.profiler.record_function("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"):
                    time.sleep(slept)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            if slept and args.sleep_in == "compute":
                time.sleep(slept)
            loss.backward()
            opt.step()
            t1 = time.time()
            prof.step()
            if step >= 0:
                rows.append((rank, i, round(t1 - t0, 6), int(t0 * 1e6), int(t1 * 1e6), slept))
    with open(out_dir / f"steps_rank{rank}.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    if args.horovod:
        hvd.shutdown()
    else:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
