#!/usr/bin/env python3
"""Makes PyPI's CUDA build of torch importable on a CPU-only machine without the nvidia-* wheels.

PyPI only has CUDA builds of torch for Linux x86_64 (the CPU-only wheels live on
download.pytorch.org). Their shared libraries (libtorch.so, libtorch_python.so, libtorch_cpu.so,
...) name the CUDA runtime libraries (libcudart, libcublas, libcudnn, libnccl, libcufile, ...) as
DT_NEEDED, which pip would fetch as nvidia-* wheels: gigabytes that a CPU benchmark never uses.

This script installs small stub libraries instead, into torch/lib (which is on the RPATH of every
torch library): one per missing CUDA library, with that library's soname, the symbol versions
torch's libraries require from it, and a do-nothing definition of every symbol torch references
from it. Every stub function returns 100 (cudaErrorNoDevice); functions named *ErrorString /
*ErrorName / *StatusString return a pointer to "CUDA stub". So torch loads, reports
torch.cuda.is_available() == False, and runs on the CPU; the CPU kernels (libtorch_cpu.so,
oneDNN, the OpenMP runtime) are the unmodified PyPI binaries. Nothing in torch is patched.

Usage: torch_cuda_stubs.py SITE_PACKAGES_DIR   (needs readelf and a C compiler: cc or $CC)
Writes torch/lib/EPOCHCAST_CUDA_STUBS listing what it made; running it again replaces the stubs
it listed there. Exit status 0 on success.
"""

import glob
import os
import re
import subprocess
import sys
import tempfile

# Libraries provided by nvidia-* / cuda-* wheels (or a CUDA toolkit). libcuda.so.1 is the driver;
# only libcaffe2_nvrtc.so (loaded on demand for CUDA JIT) needs it, so it is left alone.
CUDA_LIB = re.compile(r"^lib(cu|nv|nccl)[A-Za-z_]*\.so(\.\d+)*$")
SKIP = {"libcuda.so.1"}
# glibc, libstdc++, libgcc, libgomp: what the system and torch/lib provide.
SYSTEM_VERSION = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC|GOMP|OMP)_")


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], check=True, capture_output=True,
                          text=True).stdout


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", readelf("-d", path))


def verneeds(path):
    """{filename: set(version names)} from .gnu.version_r."""
    out, current = {}, None
    for line in readelf("-V", path).splitlines():
        m = re.search(r"Version: \d+\s+File: (\S+)\s+Cnt:", line)
        if m:
            current = out.setdefault(m.group(1), set())
            continue
        m = re.search(r"Name: (\S+)\s+Flags:", line)
        if m and current is not None:
            current.add(m.group(1))
    return out


def dynsyms(path):
    """(undefined, defined): undefined as {(name, version or None)}, defined as {name}."""
    und, defined = set(), set()
    for line in readelf("--dyn-syms", path).splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":"):
            continue
        name = f[7]
        if f[6] == "UND":
            if name and f[4] in ("GLOBAL", "WEAK"):
                base, _, ver = name.partition("@")
                und.add((base, ver.lstrip("@") or None, f[4]))
        else:
            defined.add(name.split("@")[0])
    return und, defined


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    site = sys.argv[1]
    libdir = os.path.join(site, "torch", "lib")
    marker = os.path.join(libdir, "EPOCHCAST_CUDA_STUBS")
    if os.path.exists(marker):
        # Stubs from an earlier run: remove them and start over, in case torch was upgraded and
        # now needs other libraries.
        with open(marker) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    stale = os.path.join(libdir, line.split()[0])
                    if os.path.exists(stale):
                        os.remove(stale)
        os.remove(marker)
    objects = sorted(glob.glob(os.path.join(libdir, "*.so*")) +
                     glob.glob(os.path.join(site, "torch", "_C*.so")) +
                     glob.glob(os.path.join(site, "torchvision", "_C*.so")))
    objects = [o for o in objects if os.path.isfile(o) and not os.path.islink(o)]
    present = set(os.listdir(libdir))

    missing = set()
    for o in objects:
        missing |= {n for n in needed(o)
                    if CUDA_LIB.match(n) and n not in SKIP and n not in present}
    if not missing:
        print("torch_cuda_stubs: torch needs no CUDA libraries it lacks; nothing to do")
        return 0

    versions = {n: set() for n in missing}   # version nodes each stub must define
    by_lib = {n: {} for n in missing}        # stub -> {symbol: version}
    unversioned = {}                         # symbol -> binding, resolved globally
    defined = set()
    for o in objects:
        for f, vs in verneeds(o).items():
            if f in versions:
                versions[f] |= vs
    syms_of = {o: dynsyms(o) for o in objects}
    for o in objects:
        und, d = syms_of[o]
        defined |= d
        for name, ver, bind in und:
            if ver is None:
                unversioned[name] = bind
    # Attribute versioned references once every version node is known.
    for o in objects:
        und, _ = syms_of[o]
        for name, ver, bind in und:
            if ver is not None and not SYSTEM_VERSION.match(ver):
                for lib, vs in versions.items():
                    if ver in vs:
                        by_lib[lib][name] = ver
                        break

    # Unversioned undefined symbols that no torch object defines come from the unversioned CUDA
    # libraries (libcufile, libcusparseLt, libnccl, libnvshmem_host, ...) or from the system
    # (libc/libm/libstdc++ symbols referenced without a version are rare but possible). Ask the
    # system libraries which ones they define; the rest go into one unversioned stub.
    system_defined = set()
    for lib in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libpthread.so.0",
                "libdl.so.2", "librt.so.1", "libutil.so.1"):
        for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"):
            p = os.path.join(d, lib)
            if os.path.exists(p):
                system_defined |= dynsyms(os.path.realpath(p))[1]
                break
    leftovers = sorted(n for n, bind in unversioned.items()
                       if n not in defined and n not in system_defined and bind != "WEAK"
                       and not n.startswith("_ITM_") and not n.startswith("__gmon"))
    unversioned_home = sorted(l for l in missing if not versions[l])
    home = unversioned_home[0] if unversioned_home else sorted(missing)[0]

    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        lines = []
        for lib in sorted(missing):
            syms = dict(by_lib[lib])
            if lib == home:
                for n in leftovers:
                    syms.setdefault(n, None)
            src = ['static const char stub_message[] = "CUDA stub";']
            for n in sorted(syms):
                if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", n):
                    continue
                if re.search(r"(Error|Status)(String|Name)$", n, re.I):
                    src.append(f"const char *{n}(void) {{ return stub_message; }}")
                else:
                    src.append(f"int {n}(void) {{ return 100; }}")
            c = os.path.join(tmp, lib + ".c")
            with open(c, "w") as f:
                f.write("\n".join(src) + "\n")
            cmd = [cc, "-shared", "-fPIC", "-O0", "-w", "-o", os.path.join(libdir, lib),
                   f"-Wl,-soname,{lib}", c]
            vers = sorted(versions[lib])
            if vers:
                vs = os.path.join(tmp, lib + ".map")
                with open(vs, "w") as f:
                    for v in vers:
                        names = [n for n, sv in syms.items() if sv == v]
                        body = "".join(f"{n}; " for n in names)
                        f.write(f"{v} {{ global: {body}}};\n")
                    # symbols without a version (the leftovers) stay unversioned: no "local: *"
                cmd.append(f"-Wl,--version-script={vs}")
            subprocess.run(cmd, check=True)
            lines.append(f"{lib} {len(syms)} symbols, versions: {' '.join(vers) or '-'}")
        with open(marker, "w") as f:
            f.write("# CUDA stub libraries made by epochcast bench/torch_cuda_stubs.py; "
                    "this torch runs on the CPU only\n" + "\n".join(lines) + "\n")
    print("torch_cuda_stubs: made " + ", ".join(sorted(missing)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
