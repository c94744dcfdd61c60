#!/usr/bin/env python3
"""Writes the tiny model the C and C++ examples run: graph.json + tiny.safetensors.

Standard library only. Two methods, small enough to check by hand:

    forward(x: f32[2, 3], s: f32[2]) -> (r: f32[2, 2], z: f32[4])
        r = relu(linear(x, W, b))      W = [[1, 0, -1], [0.5, 0.5, 0.5]], b = [10, -4]
        z = reshape(r + s, [-1])

    leaky(x: f32[4], slope: double) -> (y: f32[4], slope: double)
        y = leaky_relu(x, slope); the slope is returned as given

With x = [[1, 2, 3], [4, 5, 6]] and s = [1, 2]:
    linear = [[1 - 3 + 10, 3 - 4], [4 - 6 + 10, 7.5 - 4]] = [[8, -1], [8, 3.5]]
    r = [[8, 0], [8, 3.5]];  z = [9, 2, 9, 5.5]
With x = [-2, -1, 0, 3] and slope = 0.5: y = [-1, -0.5, 0, 3].

usage: make_tiny_model.py OUT_DIR   (then: tern compile OUT_DIR/graph.json -o tiny.pte)
"""
import json
import os
import struct
import sys

W = [1.0, 0.0, -1.0, 0.5, 0.5, 0.5]
B = [10.0, -4.0]


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        data = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def tensor(name, shape, **extra):
    v = {"type": "tensor", "name": name, "dtype": "f32", "shape": shape}
    v.update(extra)
    return v


GRAPH = {
    "format": "tern-graph",
    "version": 1,
    "producer": "examples/tiny_model/make_tiny_model.py",
    "source_model": "tiny",
    "weights": "tiny.safetensors",
    "methods": [
        {
            "name": "forward",
            "values": [
                tensor("x", [2, 3]),
                tensor("s", [2]),
                tensor("W", [2, 3], weight="W"),
                tensor("b", [2], weight="b"),
                tensor("h", [2, 2]),
                tensor("r", [2, 2]),
                tensor("sum", [2, 2]),
                {"type": "int_list", "name": "flat", "value": [-1]},
                tensor("z", [4]),
            ],
            "inputs": ["x", "s"],
            "outputs": ["r", "z"],
            "nodes": [
                {"op": "tern::linear", "args": ["x", "W", "b"], "outputs": ["h"], "name": "fc"},
                {"op": "tern::relu", "args": ["h"], "outputs": ["r"], "name": "act"},
                {"op": "tern::add", "args": ["r", "s"], "outputs": ["sum"], "name": "shift"},
                {"op": "tern::reshape", "args": ["sum", "flat"], "outputs": ["z"],
                 "name": "flatten"},
            ],
        },
        {
            "name": "leaky",
            "values": [
                tensor("x", [4]),
                {"type": "double", "name": "slope", "value": 0.0},
                tensor("y", [4]),
            ],
            "inputs": ["x", "slope"],
            "outputs": ["y", "slope"],
            "nodes": [
                {"op": "tern::leaky_relu", "args": ["x", "slope"], "outputs": ["y"],
                 "name": "leaky"},
            ],
        },
    ],
}


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "tiny.safetensors"),
                      {"W": ([2, 3], W), "b": ([2], B)})
    with open(os.path.join(out_dir, "graph.json"), "w") as f:
        json.dump(GRAPH, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
