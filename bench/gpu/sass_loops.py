#!/usr/bin/env python3
"""Instruction counts of a kernel's SASS, for reasoning about instructions per output
without a GPU: the whole function and its loops (backward branches), each with its
FFMA, load and store counts, largest FFMA count first.

    nvcc -cubin -arch=sm_90 -O3 --fmad=false -I... file.cu -o file.cubin
    python3 bench/gpu/sass_loops.py file.cubin MANGLED_NAME [--loops N]

cuobjdump comes from PATH, $CUDA_HOME/bin, or PyPI's nvidia-cuda-cuobjdump package.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys


def cuobjdump():
    found = shutil.which("cuobjdump") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                                                      "bin", "cuobjdump")
    if os.path.exists(found):
        return found
    try:  # the PyPI package's copy
        import nvidia
        for root in nvidia.__path__:
            for path in glob.glob(os.path.join(root, "*", "bin", "cuobjdump")):
                return path
    except ImportError:
        pass
    sys.exit("no cuobjdump: install the CUDA toolkit's or `pip install nvidia-cuda-cuobjdump`")


def sass(cubin, function):
    out = subprocess.run([cuobjdump(), "-sass", "-fun", function, cubin], capture_output=True,
                         text=True, check=True).stdout
    return [(int(m.group(1), 16), m.group(2).strip())
            for m in (re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line) for line in out.splitlines())
            if m]


def opcode(instruction):
    return re.sub(r"^@!?U?P\w+\s+", "", instruction).split()[0]


def counts(body):
    ops = [opcode(i) for _, i in body]
    return (len(ops), sum(o.startswith("FFMA") for o in ops),
            sum(o.startswith(("LDG", "LDS", "LD.", "LDL")) for o in ops),
            sum(o.startswith(("STG", "STS", "ST.", "STL")) for o in ops))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cubin")
    ap.add_argument("function", help="the mangled name (cuobjdump -symbols lists them)")
    ap.add_argument("--loops", type=int, default=4)
    args = ap.parse_args()
    ins = sass(args.cubin, args.function)
    print("%s: %d instructions, %d FFMA, %d loads, %d stores" % ((args.function,) + counts(ins)))
    loops = []
    for address, i in ins:
        target = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", i)
        if target and int(target.group(1), 16) <= address:
            start = int(target.group(1), 16)
            loops.append((start, address) + counts([x for x in ins if start <= x[0] <= address]))
    for start, end, n, ffma, loads, stores in sorted(loops, key=lambda l: -l[3])[:args.loops]:
        print(f"  loop {start:#x}-{end:#x}: {n} instructions, {ffma} FFMA, {loads} loads, {stores} stores")


if __name__ == "__main__":
    main()
