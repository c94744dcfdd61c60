#!/usr/bin/env python3
"""Writes the program the minimal runner executes: graph.json + add.safetensors (stdlib only).

    forward(x: f32[4]) -> y = x + c,   c = [1, 2, 3, 4] (a weight: one checksummed segment)

With x = ones (what minimal_runner feeds): y = [2, 3, 4, 5].

With --dynamic: forward(x: f32[n], n in [1, 4]) -> y = x + x, a program with a bounded dynamic
dim (graph.json version 2), which a core built with TERN_DYNAMIC_SHAPES=OFF must refuse.
With --shared: forward(x: f32[4]) -> acc += x, acc a state shared by the program's methods
(format 1.2), which a core built with TERN_SHARED_STATE=OFF must refuse.

usage: make_add_model.py [--dynamic | --shared] OUT_DIR
       (then: tern compile OUT_DIR/graph.json -o add.pte)
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


def shared_graph():
    return {
        "format": "tern-graph", "version": 1, "producer": "examples/minimal/make_add_model.py",
        "source_model": "add_shared",
        "methods": [{
            "name": "forward",
            "values": [{"type": "tensor", "name": "x", "dtype": "f32", "shape": [4]},
                       {"type": "tensor", "name": "acc", "dtype": "f32", "shape": [4],
                        "state": True, "shared": "acc"}],
            "inputs": ["x"], "outputs": ["acc"],
            "nodes": [{"op": "tern::add", "args": ["acc", "x"], "outputs": ["acc"], "name": "add"}],
        }],
    }


def main(out_dir, variant=None):
    os.makedirs(out_dir, exist_ok=True)
    if variant is not None:
        with open(os.path.join(out_dir, "graph.json"), "w") as f:
            json.dump(dynamic_graph() if variant == "--dynamic" else shared_graph(), f, indent=1)
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
    variant = args[0] if args[:1] in (["--dynamic"], ["--shared"]) else None
    if variant is not None:
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    main(args[0], variant)
