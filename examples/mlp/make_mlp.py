#!/usr/bin/env python3
"""Writes the demo model: graph.json + mlp.safetensors, an input and the expected output.

Standard library only, so `make demo` needs no PyTorch. The model (a residual MLP):

    h = relu(linear(x, w1, b1))        x: [1, 16] -> [1, 32]
    r = linear(h, w2, b2) + x          [1, 16]
    y = linear(r * gate, w3, b3)       [1, 4]
    out = reshape(y, [2, 2])

The expected output is computed here in plain Python, independently of tern.
"""
import json
import os
import struct
import sys


def lcg_values(seed, count, scale):
    """Deterministic pseudo-random floats in [-scale, scale), exactly representable in f32."""
    state = seed
    out = []
    for _ in range(count):
        state = (state * 1103515245 + 12345) % (1 << 31)
        out.append(struct.unpack("<f", struct.pack("<f", (state / (1 << 31) * 2 - 1) * scale))[0])
    return out


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


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


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape))
    header += " " * (-(len(header) + 11) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def linear(x, w, b, n_in, n_out):
    return [f32(sum(x[i] * w[o * n_in + i] for i in range(n_in)) + b[o]) for o in range(n_out)]


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    w1, b1 = lcg_values(1, 32 * 16, 0.25), lcg_values(2, 32, 0.1)
    w2, b2 = lcg_values(3, 16 * 32, 0.18), lcg_values(4, 16, 0.1)
    gate = lcg_values(5, 16, 1.0)
    w3, b3 = lcg_values(6, 4 * 16, 0.25), lcg_values(7, 4, 0.1)
    x = lcg_values(8, 16, 1.0)

    h = [max(v, 0.0) for v in linear(x, w1, b1, 16, 32)]
    r = [f32(a + b) for a, b in zip(linear(h, w2, b2, 32, 16), x)]
    s = [f32(a * g) for a, g in zip(r, gate)]
    y = linear(s, w3, b3, 16, 4)

    write_safetensors(os.path.join(out_dir, "mlp.safetensors"), {
        "w1": ([32, 16], w1), "b1": ([32], b1), "w2": ([16, 32], w2), "b2": ([16], b2),
        "gate": ([16], gate), "w3": ([4, 16], w3), "b3": ([4], b3)})
    write_npy(os.path.join(out_dir, "input.npy"), [1, 16], x)
    write_npy(os.path.join(out_dir, "expected.npy"), [2, 2], y)

    def t(name, shape, weight=None):
        v = {"type": "tensor", "name": name, "dtype": "f32", "shape": shape}
        if weight:
            v["weight"] = weight
        return v

    values = [
        t("x", [1, 16]), t("w1", [32, 16], "w1"), t("b1", [32], "b1"), t("h_pre", [1, 32]),
        t("h", [1, 32]), t("w2", [16, 32], "w2"), t("b2", [16], "b2"), t("r_pre", [1, 16]),
        t("r", [1, 16]), t("gate", [16], "gate"), t("s", [1, 16]), t("w3", [4, 16], "w3"),
        t("b3", [4], "b3"), t("y", [1, 4]), {"type": "int_list", "name": "out_shape",
                                             "value": [2, 2]}, t("out", [2, 2]),
    ]
    graph = {
        "format": "tern-graph", "version": 1, "producer": "examples/mlp/make_mlp.py",
        "source_model": "residual MLP 16-32-16-4", "metadata": {"example": "demo"},
        "weights": "mlp.safetensors",
        "methods": [{
            "name": "forward", "values": values, "inputs": ["x"], "outputs": ["out"],
            "nodes": [
                {"op": "tern::linear", "args": ["x", "w1", "b1"], "outputs": ["h_pre"], "name": "fc1"},
                {"op": "tern::relu", "args": ["h_pre"], "outputs": ["h"], "name": "act"},
                {"op": "tern::linear", "args": ["h", "w2", "b2"], "outputs": ["r_pre"], "name": "fc2"},
                {"op": "tern::add", "args": ["r_pre", "x"], "outputs": ["r"], "name": "residual"},
                {"op": "tern::mul", "args": ["r", "gate"], "outputs": ["s"], "name": "gate"},
                {"op": "tern::linear", "args": ["s", "w3", "b3"], "outputs": ["y"], "name": "head"},
                {"op": "tern::reshape", "args": ["y", "out_shape"], "outputs": ["out"], "name": "view"},
            ],
        }],
    }
    with open(os.path.join(out_dir, "graph.json"), "w") as f:
        json.dump(graph, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mlp_out")
