#!/usr/bin/env python3
"""Writes the program the minimal runner executes: graph.json + add.safetensors (stdlib only).

    forward(x: f32[4]) -> y = x + c,   c = [1, 2, 3, 4] (a weight: one checksummed segment)

With x = ones (what minimal_runner feeds): y = [2, 3, 4, 5].

usage: make_add_model.py OUT_DIR   (then: tern compile OUT_DIR/graph.json -o add.pte)
"""
import json
import os
import struct
import sys

C = [1.0, 2.0, 3.0, 4.0]


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    data = struct.pack("<4f", *C)
    header = json.dumps({"c": {"dtype": "F32", "shape": [4], "data_offsets": [0, len(data)]}})
    header = header.encode() + b" " * (-len(header) % 8)
    with open(os.path.join(out_dir, "add.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)

    def tensor(name, **extra):
        v = {"type": "tensor", "name": name, "dtype": "f32", "shape": [4]}
        v.update(extra)
        return v

    graph = {
        "format": "tern-graph", "version": 1, "producer": "examples/minimal/make_add_model.py",
        "source_model": "add", "weights": "add.safetensors",
        "methods": [{
            "name": "forward",
            "values": [tensor("x"), tensor("c", weight="c"), tensor("y")],
            "inputs": ["x"], "outputs": ["y"],
            "nodes": [{"op": "tern::add", "args": ["x", "c"], "outputs": ["y"], "name": "add"}],
        }],
    }
    with open(os.path.join(out_dir, "graph.json"), "w") as f:
        json.dump(graph, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
