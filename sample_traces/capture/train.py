"""A small Horovod + PyTorch (CPU, Gloo) training job that records its own ground truth.

Run by ``capture.py`` under ``horovodrun --gloo``. Every rank times each step
(``zero_grad`` -> forward -> optional injected sleep -> backward -> ``opt.step()``, which
waits for the gradient allreduces) and writes ``steps_rank<R>.csv``:
``rank,step,step_time_s,start_epoch_us,end_epoch_us,sleep_s``.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import horovod.torch as hvd
import torch
from sleeps import sleeps  # this folder: the script runs as a script
from torch import nn


def model_for(name: str, big_layer: int) -> nn.Module:
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(32 * 8 * 8, 128),
            nn.ReLU(),
            nn.Linear(128, 10),
        )
    layers: list[nn.Module] = [nn.Linear(1024, 1024), nn.ReLU()]
    if big_layer:  # one gradient far larger than the others (over a small fusion threshold)
        layers += [nn.Linear(1024, big_layer), nn.ReLU(), nn.Linear(big_layer, 1024), nn.ReLU()]
    layers += [nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sleep-rank", type=int, default=-1, help="rank that sleeps before backward every step")
    ap.add_argument("--sleep-s", type=float, default=0.0)
    ap.add_argument("--sleep-from", type=int, default=0, help="the sleeping rank sleeps from this step on")
    ap.add_argument("--sleep-to", type=int, default=-1, help="... and before this step only (-1: to the end)")
    ap.add_argument("--sleep-every", type=int, default=1, help="... on every K-th step only, counted from --sleep-from")
    ap.add_argument("--sleep-all", action="store_true", help="every rank sleeps (a whole-job slowdown)")
    ap.add_argument("--big-layer", type=int, default=0, help="width of an extra large layer (0: none)")
    ap.add_argument("--extra-collectives", action="store_true", help="allgather, broadcast, alltoall each step")
    ap.add_argument("--dynamic-timeline", default="", help="hvd.start_timeline(PATH) after 5 steps (rank 0)")
    ap.add_argument("--out", default=".", help="where steps_rank<R>.csv goes")
    args = ap.parse_args()

    hvd.init()
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    model = model_for(args.model, args.big_layer)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    shape = (args.batch, 3, 32, 32) if args.model == "cnn" else (args.batch, 1024)
    x, y = torch.randn(*shape), torch.randint(0, 10, (args.batch,))
    loss_fn = nn.CrossEntropyLoss()
    out = open(Path(args.out) / f"steps_rank{hvd.rank()}.csv", "w", newline="")  # row by row
    rows = csv.writer(out)  # written and flushed every step: a killed job keeps the steps it finished
    for step in range(args.steps):
        if args.dynamic_timeline and step == 5:
            hvd.start_timeline(args.dynamic_timeline, mark_cycles=True)
        t0 = time.time()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        slept = args.sleep_s if sleeps(args, hvd.rank(), step) else 0.0
        if slept:
            time.sleep(slept)
        loss.backward()
        opt.step()
        if args.extra_collectives:
            hvd.allgather(torch.full((2, 4), float(hvd.rank())), name="gather_stats")
            hvd.broadcast(torch.arange(8.0), root_rank=0, name="sync_flags")
            hvd.alltoall(torch.arange(4.0 * hvd.size()), name="shuffle_ids")
        t1 = time.time()
        rows.writerow((hvd.rank(), step, round(t1 - t0, 6), int(t0 * 1e6), int(t1 * 1e6), slept))
        out.flush()
    out.close()
    if args.dynamic_timeline:
        hvd.stop_timeline()
    hvd.shutdown()


if __name__ == "__main__":
    main()
