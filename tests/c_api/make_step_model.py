#!/usr/bin/env python3
"""Writes a language-model-shaped program for the C API's generation test (stdlib only):

    decode(token: i64[1, 1], position: i64[1]) -> logits f32[1, 1, 8]
    prefill(tokens: i64[1, seq], positions: i64[seq]) -> logits f32[1, seq, 8], seq in 1..3

decode's logits = row `token` of an 8 x 8 table with 5.0 at column (token + 1) % 8 and 0
elsewhere, so greedy decoding counts up by one; a state `seen` adds up the positions it was
given. prefill's rows put 5.0 at (token + 2) % 8 (so the first token after a prefill shows
that prefill chose it).

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
    table2 = [5.0 if c == (r + 2) % V else 0.0 for r in range(V) for c in range(V)]
    data = struct.pack("<%df" % (2 * len(table)), *(table + table2))
    half = len(data) // 2
    header = json.dumps({"table": {"dtype": "F32", "shape": [V, V], "data_offsets": [0, half]},
                         "table2": {"dtype": "F32", "shape": [V, V],
                                    "data_offsets": [half, len(data)]}})
    header = header.encode() + b" " * (-len(header) % 8)
    with open(os.path.join(out_dir, "step.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    graph = {
        "format": "tern-graph", "version": 2, "producer": "tests/c_api/make_step_model.py",
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
        }, {
            "name": "prefill",
            "symbols": [{"name": "seq", "min": 1, "max": 3}],
            "values": [
                {"type": "tensor", "name": "tokens", "dtype": "i64", "shape": [1, 3],
                 "dim_symbols": [None, "seq"]},
                {"type": "tensor", "name": "positions", "dtype": "i64", "shape": [3],
                 "dim_symbols": ["seq"]},
                {"type": "tensor", "name": "table2", "dtype": "f32", "shape": [V, V],
                 "weight": "table2"},
                {"type": "tensor", "name": "logits", "dtype": "f32", "shape": [1, 3, V],
                 "dim_symbols": [None, "seq", None]},
            ],
            "inputs": ["tokens", "positions"], "outputs": ["logits"],
            "nodes": [
                {"op": "tern::embedding", "args": ["table2", "tokens"], "outputs": ["logits"]},
            ],
        }],
    }
    with open(os.path.join(out_dir, "graph.json"), "w") as f:
        json.dump(graph, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
