#!/usr/bin/env python3
"""Writes the program the minimal runner executes: graph.json + add.safetensors (stdlib only).

    forward(x: f32[4]) -> y = x + c,   c = [1, 2, 3, 4] (a weight: one checksummed segment)

With x = ones (what minimal_runner feeds): y = [2, 3, 4, 5].

With --dynamic: forward(x: f32[n], n in [1, 4]) -> y = x + x, a program with a bounded dynamic
dim (graph.json version 2), which a core built with TERN_DYNAMIC_SHAPES=OFF must refuse.

usage: make_add_model.py [--dynamic] OUT_DIR   (then: tern compile OUT_DIR/graph.json -o add.pte)
"""
import json
import os
import struct
import sys

C = [1.0, 2.0, 3.0, 4.0]


def dynamic_graph():
    def tensor(name):
        return {"type": "tensor", "name": name, "dtype": "f32", "shape": [4], "dim_symbols": ["n"]}

    return {
        "format": "tern-graph", "version": 2, "producer": "examples/minimal/make_add_model.py",
        "source_model": "add_dynamic",
        "methods": [{
            "name": "forward",
            "symbols": [{"name": "n", "min": 1, "max": 4}],
            "values": [tensor("x"), tensor("y")],
            "inputs": ["x"], "outputs": ["y"],
            "nodes": [{"op": "tern::add", "args": ["x", "x"], "outputs": ["y"], "name": "add"}],
        }],
    }


def main(out_dir, dynamic=False):
    os.makedirs(out_dir, exist_ok=True)
    if dynamic:
        with open(os.path.join(out_dir, "graph.json"), "w") as f:
            json.dump(dynamic_graph(), f, indent=1)
        return
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
    args = sys.argv[1:]
    dynamic = args[:1] == ["--dynamic"]
    if dynamic:
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    main(args[0], dynamic)
