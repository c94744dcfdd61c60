#!/usr/bin/env python3
"""compare_npy.py ACTUAL EXPECTED [RTOL]: compares two little-endian f32 .npy files."""
import ast
import struct
import sys


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise SystemExit("%s: not a .npy file" % path)
    major = data[6]
    if major == 1:
        hlen, start = struct.unpack("<H", data[8:10])[0], 10
    else:
        hlen, start = struct.unpack("<I", data[8:12])[0], 12
    header = ast.literal_eval(data[start:start + hlen].decode())
    if header["descr"] != "<f4":
        raise SystemExit("%s: expected <f4, found %s" % (path, header["descr"]))
    body = data[start + hlen:]
    return tuple(header["shape"]), struct.unpack("<%df" % (len(body) // 4), body)


def main():
    actual_shape, actual = read_npy(sys.argv[1])
    expected_shape, expected = read_npy(sys.argv[2])
    rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    if actual_shape != expected_shape:
        raise SystemExit("shape mismatch: got %s, expected %s" % (actual_shape, expected_shape))
    scale = max(abs(v) for v in expected) or 1.0
    err = max(abs(a - e) for a, e in zip(actual, expected))
    print("max abs error %.3g (%.3g of max |expected| %.3g)" % (err, err / scale, scale))
    if err > rtol * scale:
        raise SystemExit("demo output differs from the Python reference")


if __name__ == "__main__":
    main()
