#!/usr/bin/env python3
"""Writes a language-model-shaped step program for the C API's generation test (stdlib only):

    decode(token: i64[1, 1], position: i64[1]) -> logits f32[1, 1, 8]

logits = row `token` of an 8 x 8 table with 5.0 at column (token + 1) % 8 and 0 elsewhere, so
greedy decoding counts up by one; a state `seen` adds up the positions it was given.

usage: make_step_model.py OUT_DIR   (then: tern compile OUT_DIR/graph.json -o step.pte)
"""
import json
import os
import struct
import sys

V = 8


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    table = [5.0 if c == (r + 1) % V else 0.0 for r in range(V) for c in range(V)]
    data = struct.pack("<%df" % len(table), *table)
    header = json.dumps({"table": {"dtype": "F32", "shape": [V, V], "data_offsets": [0, len(data)]}})
    header = header.encode() + b" " * (-len(header) % 8)
    with open(os.path.join(out_dir, "step.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    graph = {
        "format": "tern-graph", "version": 1, "producer": "tests/c_api/make_step_model.py",
        "source_model": "counting_step", "weights": "step.safetensors",
        "methods": [{
            "name": "decode",
            "values": [
                {"type": "tensor", "name": "token", "dtype": "i64", "shape": [1, 1]},
                {"type": "tensor", "name": "position", "dtype": "i64", "shape": [1]},
                {"type": "tensor", "name": "table", "dtype": "f32", "shape": [V, V],
                 "weight": "table"},
                {"type": "tensor", "name": "logits", "dtype": "f32", "shape": [1, 1, V]},
                {"type": "tensor", "name": "seen", "dtype": "i64", "shape": [1], "state": True},
            ],
            "inputs": ["token", "position"], "outputs": ["logits"],
            "nodes": [
                {"op": "tern::embedding", "args": ["table", "token"], "outputs": ["logits"]},
                {"op": "tern::add", "args": ["seen", "position"], "outputs": ["seen"]},
            ],
        }],
    }
    with open(os.path.join(out_dir, "graph.json"), "w") as f:
        json.dump(graph, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
