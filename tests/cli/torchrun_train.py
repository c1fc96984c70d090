"""A small data-parallel training, started by the torchrun lines `predict --emit torchrun` writes
(tests/cli/torchrun_lines.sh): a tiny ResNet-like network trained on random images of a few
classes on the CPU, its gradients all-reduced by DistributedDataParallel over gloo. It checks
that the ranks agree (the parameters after DDP's broadcast, the gradients after the first step's
all-reduce, the parameters at the end) although each rank starts from its own initialisation and
trains on its own images, and rank 0 prints the lines torchvision's reference train.py prints
(its arguments' Namespace, MetricLogger's step lines, each epoch's total time), which
`epochcast import-log --format torchvision` reads.

Run by torchrun as: torchrun_train.py --data DIR --image-size PX --batch-size B --epochs E --lr LR
--images N (N images an epoch over all ranks); torchrun gives RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR and MASTER_PORT. Exits non-zero, saying why, where the ranks disagree.
"""
import argparse
import collections
import datetime
import math
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

CLASSES = 4
PRINT_FREQ = 10  # train.py's default --print-freq
WINDOW = 20  # MetricLogger's SmoothedValue window: "time" is the mean of the last 20 steps


class Block(nn.Module):
    """Two 3x3 convolutions and a shortcut, ResNet's basic block."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


def tiny_resnet():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        Block(16), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, CLASSES))


def images(generator, batch, size):
    """A batch of random images whose class shifts their mean, and the classes."""
    labels = torch.randint(0, CLASSES, (batch,), generator=generator)
    pixels = torch.randn(batch, 3, size, size, generator=generator)
    return pixels + labels.view(-1, 1, 1, 1).float() * 0.5, labels


def flat(tensors):
    return torch.cat([t.detach().reshape(-1).double() for t in tensors])


def gathered(vector):
    """Every rank's copy of `vector`."""
    copies = [torch.empty_like(vector) for _ in range(dist.get_world_size())]
    dist.all_gather(copies, vector)
    return copies


def agree(what, vector, rank, world):
    """Stops the run, saying so, unless every rank holds the same `vector`."""
    copies = gathered(vector)
    if not all(torch.equal(copies[0], c) for c in copies):
        sys.exit(f"rank {rank} of {world}: the ranks' {what} differ")
    # The same once more as a sum: all ranks' checksums add up to world x this rank's.
    checksum = vector.sum().reshape(1)
    total = checksum.clone()
    dist.all_reduce(total)
    if not math.isclose(total.item(), world * checksum.item(), rel_tol=1e-9, abs_tol=1e-12):
        sys.exit(f"rank {rank} of {world}: all-reduced {what} checksum {total.item()} is not "
                 f"{world} x {checksum.item()}")


def clock(seconds):
    return str(datetime.timedelta(seconds=int(seconds)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--image-size", type=int, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--epochs", type=float, required=True)
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--images", type=int, required=True)
    args = parser.parse_args()
    if not os.path.isdir(args.data):
        sys.exit(f"--data {args.data}: no such folder (the launch file's DATA)")

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("gloo")
    if (dist.get_rank(), dist.get_world_size()) != (rank, world):
        sys.exit(f"gloo's rank {dist.get_rank()} of {dist.get_world_size()}, torchrun's {rank} of {world}")
    args.world_size = world
    args.rank = rank
    args.dist_url = "env://"
    if rank == 0:
        print(f"| distributed init (rank {rank}): {args.dist_url}")
        print(args)

    # Each rank its own initialisation and its own images: agreement below is DDP's doing.
    torch.manual_seed(1000 + rank)
    torch.set_num_threads(1)
    model = tiny_resnet()
    starts = gathered(flat(model.parameters()))
    if world > 1 and all(torch.equal(starts[0], s) for s in starts):
        sys.exit("the ranks started from the same parameters: the check below would prove nothing")
    model = DistributedDataParallel(model)
    agree("parameters after DDP's broadcast", flat(model.parameters()), rank, world)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(2000 + rank)

    steps = args.images // (args.batch_size * world)
    if steps < 1:
        sys.exit(f"--images {args.images}: fewer than one step of {args.batch_size} x {world}")
    width = len(str(steps))
    started = time.time()
    for epoch in range(math.ceil(args.epochs)):
        model.train()
        times = collections.deque(maxlen=WINDOW)
        losses = []
        epoch_start = time.time()
        end = time.time()
        for step in range(steps):
            x, y = images(generator, args.batch_size, args.image_size)
            data_s = time.time() - end
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            if epoch == 0 and step == 0:
                local = gathered(loss.detach().double().reshape(1))
                if world > 1 and all(torch.equal(local[0], c) for c in local):
                    sys.exit("the ranks' first losses are the same: their images do not differ")
                gradients = flat(p.grad for p in model.parameters())
                agree("gradients after the first all-reduce", gradients, rank, world)
            optimizer.step()
            losses.append(loss.item())
            times.append(time.time() - end)
            end = time.time()
            if rank == 0 and (step % PRINT_FREQ == 0 or step == steps - 1):
                mean = sum(times) / len(times)
                eta = mean * (steps - 1 - step)
                print(f"Epoch: [{epoch}]  [{step:>{width}}/{steps}]  eta: {clock(eta)}  lr: {args.lr}  "
                      f"img/s: {args.batch_size / times[-1]:.2f}  "
                      f"loss: {losses[-1]:.4f} ({sum(losses) / len(losses):.4f})  "
                      f"time: {mean:.4f}  data: {data_s:.4f}")
        if rank == 0:
            print(f"Epoch: [{epoch}] Total time: {clock(time.time() - epoch_start)}")
    agree("parameters after training", flat(model.parameters()), rank, world)
    print(f"rank {rank} of {world} (local rank {local_rank}): parameters and gradients agree across the ranks")
    if rank == 0:
        print(f"Training time {clock(time.time() - started)}")
    dist.barrier()
    # torch 1.13 (Debian 12's) can deadlock tearing DDP down: the reducer's last reference to the
    # gloo group is dropped with the GIL held, and the group's destructor joins a worker thread
    # that waits for the GIL to free a tensor it still holds. Every rank is past its last
    # collective here, so the process leaves without tearing anything down.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
