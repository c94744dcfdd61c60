"""A minimal safetensors writer and reader (numpy + struct; no dependency on the safetensors
package). Format: 8-byte little-endian header length, a JSON header {name: {dtype, shape,
data_offsets}} padded with spaces to a multiple of 8, then the tensors' bytes back to back."""
import json
import struct
import sys

import numpy as np
import torch

# torch dtype -> (safetensors dtype, tern dtype)
DTYPES = {
    torch.float32: ("F32", "f32"),
    torch.float16: ("F16", "f16"),
    torch.bfloat16: ("BF16", "bf16"),
    torch.int64: ("I64", "i64"),
    torch.int32: ("I32", "i32"),
    torch.int16: ("I16", "i16"),
    torch.int8: ("I8", "i8"),
    torch.uint8: ("U8", "u8"),
    torch.bool: ("BOOL", "bool"),
}

_NUMPY = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
          "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def _le_array(t):
    """The tensor's elements in C order as a little-endian numpy array: a view of t's storage
    when t is a contiguous CPU tensor (no copy), else a contiguous copy of t alone."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    if sys.byteorder != "little":
        raise NotImplementedError("safetensors: writing from a big-endian host is not supported")
    return t.numpy()


def write_safetensors(path, tensors, metadata=None):
    """Writes `tensors` (an ordered mapping name -> torch.Tensor) to `path`, one tensor at a
    time from its own storage: no copy of the weights is held (a 1.1B-parameter model's 4.4 GB
    were held twice while writing)."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    # The bytes by decreasing element size (stable): every tensor then starts at a multiple of
    # its element size (the data area starts 8-byte aligned), so `tern compile` maps them in
    # place rather than copying them into memory (tools/compiler/safetensors.h). The header
    # keeps the caller's order.
    entries = {}
    order = sorted(tensors.items(), key=lambda kv: -kv[1].element_size())
    for name, t in order:
        if t.dtype not in DTYPES:
            raise ValueError("safetensors: tensor '%s' has unsupported dtype %s" % (name, t.dtype))
        nbytes = t.numel() * t.element_size()
        entries[name] = {"dtype": DTYPES[t.dtype][0], "shape": list(t.shape),
                         "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    for name in tensors:
        header[name] = entries[name]
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, t in order:
            if t.numel() > 0:
                f.write(memoryview(_le_array(t).reshape(-1)).cast("B"))


def read_safetensors(path):
    """Reads a file written by write_safetensors (no BF16): name -> numpy array, in order."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode())
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[8 + n + begin:8 + n + end], dtype=_NUMPY[info["dtype"]])
        out[name] = arr.reshape(info["shape"])
    return out
