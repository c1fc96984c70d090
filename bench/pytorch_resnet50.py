#!/usr/bin/env python3
"""Training-step throughput of torchvision's ResNet-50 on the CPU or one GPU, for comparison with epochcast's executor.

One step: forward, cross-entropy loss, backward, SGD(lr=0.1, momentum=0.9, nesterov=True,
weight_decay=1e-4) update. The model is randomly initialised (no weights are downloaded), the
inputs and labels are random and allocated once, the model and the inputs are in channels_last.
Precision "fp32" runs in float32; "bf16" runs the forward pass (and so the backward pass of the
autocast ops) under torch.autocast("cpu", dtype=torch.bfloat16), with float32 master weights.
With --device cuda (bench/gpu-check.sh): "fp16" is PyTorch AMP, torch.autocast("cuda",
dtype=torch.float16) with a GradScaler (dynamic loss scaling), cuDNN benchmark mode on; the inputs
live on the GPU and every timed step ends with a device synchronisation. --compile runs the model
through torch.compile (TorchInductor, default mode): the first warm-up step compiles it, and
"warmup_s" gives each warm-up step's seconds. Out of GPU memory: exit 3 with one line on stderr.

Prints exactly one JSON line on stdout (diagnostics go to stderr):
{"framework":"pytorch","torch_version":...,"precision":...,"image_size":...,"batch":...,
 "threads":...,"images_per_s":...,"step_s":[...], ...}
images_per_s is batch / median(step_s); images_per_s_best is batch / min(step_s). Works with torch 1.13 (Debian 12) and torch 2.x.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
import torchvision


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="bf16")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=3, help="untimed steps before the timed ones")
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compile", action="store_true", help="torch.compile the model (torch >= 2.0)")
    return p.parse_args()


def make_resnet50(num_classes):
    # torchvision >= 0.13 takes weights=, older ones pretrained= (0.13/0.14 accept both, with a
    # deprecation warning for pretrained=).
    try:
        return torchvision.models.resnet50(weights=None, num_classes=num_classes)
    except TypeError:
        return torchvision.models.resnet50(pretrained=False, num_classes=num_classes)


def autocast_bf16():
    # torch.autocast(device_type, dtype=...) exists since 1.10; torch.cpu.amp.autocast is the
    # older spelling (deprecated in 2.4).
    if hasattr(torch, "autocast"):
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return torch.cpu.amp.autocast(dtype=torch.bfloat16)


def tcmalloc_loaded():
    """True when a tcmalloc library is mapped into this process (e.g. via LD_PRELOAD)."""
    try:
        with open("/proc/self/maps") as f:
            return any("tcmalloc" in line for line in f)
    except OSError:
        return "tcmalloc" in os.environ.get("LD_PRELOAD", "")


def main():
    args = parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch < 1 or args.threads < 1:
        sys.exit("pytorch_resnet50.py: --steps, --batch, --threads must be >= 1 and --warmup >= 0")
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set (only possible before any parallel work)

    if args.precision == "fp16" and args.device != "cuda":
        sys.exit("pytorch_resnet50.py: --precision fp16 needs --device cuda")
    device = torch.device(args.device)
    if args.device == "cuda":
        torch.backends.cudnn.benchmark = True
    model = make_resnet50(args.num_classes).to(device, memory_format=torch.channels_last)
    model.train()
    if args.compile:
        model = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)
    criterion = torch.nn.CrossEntropyLoss()
    images = torch.randn(args.batch, 3, args.image_size, args.image_size, device=device).to(
        memory_format=torch.channels_last)
    labels = torch.randint(0, args.num_classes, (args.batch,), device=device)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 15) if args.precision == "fp16" else None

    def synchronize():
        if args.device == "cuda":
            torch.cuda.synchronize()

    def step():
        optimizer.zero_grad(set_to_none=True)
        if scaler is not None:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(images), labels)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            return loss
        if args.precision == "bf16":
            with autocast_bf16():
                loss = criterion(model(images), labels)
        else:
            loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    load_start = os.getloadavg()[0]
    warmup_s = []
    step_s = []
    try:
        for i in range(args.warmup):
            t0 = time.perf_counter()
            loss = step()
            synchronize()
            warmup_s.append(time.perf_counter() - t0)
            print(f"warm-up step {i + 1}/{args.warmup}: {warmup_s[-1]:.3f} s, "
                  f"loss {loss.item():.4f}", file=sys.stderr)
        for i in range(args.steps):
            t0 = time.perf_counter()
            loss = step()
            loss.item()  # CPU ops are synchronous; this only keeps the loss alive until here
            synchronize()
            step_s.append(time.perf_counter() - t0)
            print(f"step {i + 1}/{args.steps}: {step_s[-1]:.3f} s", file=sys.stderr)
    except RuntimeError as error:  # torch.cuda.OutOfMemoryError is one
        if "out of memory" not in str(error).lower():
            raise
        print(f"pytorch_resnet50.py: out of memory at batch {args.batch}", file=sys.stderr)
        sys.exit(3)

    median = statistics.median(step_s)
    mkldnn_bf16 = None
    if hasattr(torch.ops, "mkldnn") and hasattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported"):
        try:
            mkldnn_bf16 = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
        except Exception:  # noqa: BLE001 - informational only
            mkldnn_bf16 = None
    result = {
        "framework": "pytorch",
        "device": (torch.cuda.get_device_name() if args.device == "cuda" else "cpu"),
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "precision": args.precision,
        "image_size": args.image_size,
        "batch": args.batch,
        "threads": args.threads,
        "images_per_s": round(args.batch / median, 3),
        "images_per_s_mean": round(args.batch * len(step_s) / sum(step_s), 3),
        # the fastest step: on a machine shared with other work, the closest to uncontended speed
        "images_per_s_best": round(args.batch / min(step_s), 3),
        "step_s": [round(s, 4) for s in step_s],
        "warmup": args.warmup,
        "warmup_s": [round(s, 3) for s in warmup_s],
        "compiled": args.compile,
        "max_memory_allocated_GiB": (round(torch.cuda.max_memory_allocated() / 2**30, 2)
                                     if args.device == "cuda" else None),
        "steps": args.steps,
        "final_loss": round(float(loss.item()), 4),
        "tcmalloc": tcmalloc_loaded(),
        # 1-minute load average before the warm-up and after the timed steps: a value well above
        # the thread count means other processes competed for the cores during the measurement.
        "loadavg_1min": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "mkldnn_bf16_supported": mkldnn_bf16,
        "cpu_capability": (torch.backends.cpu.get_cpu_capability()
                           if hasattr(torch.backends, "cpu")
                           and hasattr(torch.backends.cpu, "get_cpu_capability") else None),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
