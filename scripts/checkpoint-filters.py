#!/usr/bin/env python3
"""What a checkpoint's conv filters and batch norms look like: per conv layer the mean norm of
its output channels' weights, the share of their energy in the kernels' DC (each kernel's mean:
a flat filter), and its batch norm's running variance (median and largest channel).

Usage: python3 scripts/checkpoint-filters.py CHECKPOINT... (an `fdsr train --checkpoint DIR`
folder or its checkpoint.safetensors; standard library only).
"""

import json
import math
import struct
import sys
from array import array
from pathlib import Path


def load(path):
    """The F32 tensors of a safetensors file (name -> (shape, values)) and its metadata."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > Path(path).stat().st_size - 8:
            raise ValueError("its header length runs past the end of the file")
        header = json.loads(f.read(n))
        if not isinstance(header, dict):
            raise ValueError("its header is not a JSON object")
        tensors = {}
        for name, t in header.items():
            if name == "__metadata__" or t["dtype"] != "F32":
                continue
            start, end = t["data_offsets"]
            f.seek(8 + n + start)
            values = array("f")
            values.frombytes(f.read(end - start))
            tensors[name] = (t["shape"], values)
    return tensors, header.get("__metadata__", {})


def filters(shape, w):
    """Mean output-channel norm and the DC's share of the energy of a [O, I, KH, KW] weight."""
    o, i = shape[0], shape[1]
    k = len(w) // (o * i)
    norms, dc, total = [], 0.0, 0.0
    for a in range(o):
        energy = 0.0
        for b in range(i):
            kernel = w[(a * i + b) * k : (a * i + b + 1) * k]
            dc += sum(kernel) ** 2 / k
            energy += sum(x * x for x in kernel)
        norms.append(math.sqrt(energy))
        total += energy
    return sum(norms) / o, dc / total if total > 0 else 0.0


def main(paths):
    if not paths:
        sys.exit(__doc__)
    for p in map(Path, paths):
        file = p / "checkpoint.safetensors" if p.is_dir() else p
        try:
            tensors, meta = load(file)
        except (OSError, ValueError, KeyError, struct.error) as e:
            sys.exit(f"{file}: not a readable safetensors checkpoint ({e})")
        print(f"{file} (step {meta.get('step', '?')})")
        print("| conv | mean channel norm | DC share of the energy | running var median | running var max |")
        print("|---|---:|---:|---:|---:|")
        for name in sorted(n for n in tensors if n.endswith("conv.weight") and len(tensors[n][0]) == 4):
            norm, dc = filters(*tensors[name])
            layer = name[: -len("conv.weight")]
            _, running_var = tensors.get(f"{layer}bn.running_var", (None, []))
            rv = sorted(running_var)
            med, top = (f"{rv[len(rv) // 2]:.3g}", f"{rv[-1]:.3g}") if rv else ("–", "–")
            print(f"| {name} | {norm:.3f} | {dc:.3f} | {med} | {top} |")


if __name__ == "__main__":
    main(sys.argv[1:])
