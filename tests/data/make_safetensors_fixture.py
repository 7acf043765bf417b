#!/usr/bin/env python3
"""Writes fixture.safetensors from the published safetensors layout
(https://huggingface.co/docs/safetensors): an 8-byte little-endian header
length, a JSON header, then the raw little-endian tensor data. It uses only
json and struct, so it shares nothing with nnvm's reader. tests/api/
serialize_test.cpp checks the values against the formulas below.
"""
import json
import struct
import sys

# name -> (dtype, shape, struct format char, values); the data is laid out in this
# order, which is deliberately not the alphabetical order of the names.
TENSORS = [
    ("weight", "F32", [2, 3], "f", [i * 0.25 - 0.5 for i in range(6)]),
    ("ids", "I64", [4], "q", [-3, 0, 7, 2**40]),
    ("scale", "F64", [], "d", [0.1]),
    ("half", "F16", [3], "e", [1.5, -2.0, 65504.0]),
    ("flags", "BOOL", [2, 2], "?", [True, False, False, True]),
    ("bytes", "U8", [3], "B", [0, 127, 255]),
    ("counts", "I32", [2], "i", [-7, 123456]),
    ("small", "I8", [2], "b", [-128, 5]),
    ("empty", "F32", [0, 2], "f", []),
]
# bfloat16 is the top half of a float32: 1.0 and -0.375 are exact.
BF16_VALUES = [1.0, -0.375]


def bf16_bytes(values):
    return b"".join(struct.pack("<f", v)[2:] for v in values)


def main(path):
    header = {"__metadata__": {"format": "pt", "note": "made by make_safetensors_fixture.py"}}
    data = b""
    for name, dtype, shape, fmt, values in TENSORS:
        blob = struct.pack("<%d%s" % (len(values), fmt), *values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    blob = bf16_bytes(BF16_VALUES)
    header["bf"] = {"dtype": "BF16", "shape": [2], "data_offsets": [len(data), len(data) + len(blob)]}
    data += blob
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the spec allows trailing spaces; they align the data
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fixture.safetensors")
