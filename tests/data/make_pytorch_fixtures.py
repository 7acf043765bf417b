#!/usr/bin/env python3
"""Writes the fixtures of tests/api/pytorch_test.cpp and npy_test.cpp into
tests/data/pytorch/ with PyTorch and NumPy themselves, so nnvm's readers are
checked against the files those libraries write:

  net_state_dict.pt      torch.save(net.state_dict()): a small CNN + MLP whose buffers
                         are float64, float16, bfloat16, int64 and bool
  net_state_dict_p4.pt   the same with pickle_protocol=4 (STACK_GLOBAL, MEMOIZE, FRAME)
  net_scripted.pt        torch.jit.save(torch.jit.script(net))
  net_io.pt              {"input": x, "output": net(x)} in eval mode
  tensors.pt             one tensor per dtype, a 0-d and an empty tensor, views of one
                         storage (transposed, sliced with an offset, expanded: stride 0) and
                         two nn.Parameters
  tensors_rezipped.pt    tensors.pt's entries deflated, with zip64 extra fields and a
                         zip64 end record, written by rezip() below
  *.npy                  NumPy arrays; the test checks them against the same formulas

Run: python3 tests/data/make_pytorch_fixtures.py   (needs torch and numpy)
"""
import os
import struct
import zipfile
import zlib

import numpy as np
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 3))
        self.register_buffer("scale64", torch.tensor([0.5, 2.0], dtype=torch.float64))
        self.register_buffer("table16", torch.tensor([0.5, -1.25], dtype=torch.float16))
        self.register_buffer("table_bf16", torch.tensor([1.0, -0.375], dtype=torch.bfloat16))
        self.register_buffer("steps", torch.tensor([3, 1 << 40]))
        self.register_buffer("mask", torch.tensor([True, False, True]))

    def forward(self, x):
        return self.head(self.features(x))


def net_fixtures():
    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():  # three training batches move batch norm's running statistics
        for _ in range(3):
            net(torch.randn(4, 1, 8, 8))
    net.eval()
    x = torch.randn(2, 1, 8, 8)
    with torch.no_grad():
        y = net(x)
    torch.save(net.state_dict(), os.path.join(OUT, "net_state_dict.pt"))
    torch.save(net.state_dict(), os.path.join(OUT, "net_state_dict_p4.pt"), pickle_protocol=4)
    torch.jit.save(torch.jit.script(net), os.path.join(OUT, "net_scripted.pt"))
    torch.save({"input": x, "output": y}, os.path.join(OUT, "net_io.pt"))


def tensors_fixture():
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    tensors = {
        "f32": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.25 - 0.5,
        "f64": torch.tensor([0.1, -2.5, 1e300], dtype=torch.float64),
        "f16": torch.tensor([1.5, -2.0, 65504.0], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -0.375], dtype=torch.bfloat16),
        "i64": torch.tensor([-3, 0, 7, 1 << 40]),
        "i32": torch.tensor([-7, 123456], dtype=torch.int32),
        "i8": torch.tensor([-128, 5], dtype=torch.int8),
        "u8": torch.tensor([0, 127, 255], dtype=torch.uint8),
        "bool": torch.tensor([[True, False], [False, True]]),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 2),
        "base": base,
        "transposed": base.t(),  # [4, 3], strides [1, 4]
        "slice": base[1:, 1:3],  # [2, 2], offset 5, strides [4, 1]
        "expanded": torch.tensor([1.0, 2.0]).expand(3, 2),  # strides [0, 1]
        "parameter": nn.Parameter(torch.tensor([1.0, -1.0])),  # torch._utils._rebuild_parameter
        "parameter_with_state": parameter_with_state(),  # _rebuild_parameter_with_state
    }
    path = os.path.join(OUT, "tensors.pt")
    torch.save(tensors, path)
    rezip(path, os.path.join(OUT, "tensors_rezipped.pt"))


def parameter_with_state():
    p = nn.Parameter(torch.tensor([0.5]), requires_grad=False)
    p.note = "a Python attribute"
    return p


def rezip(src, dst):
    """Rewrites a zip with every entry deflated and zip64 extra fields (sizes and
    offset) in the central directory, followed by zip64 end records: the parts
    of the format torch.save's own writer does not use."""
    with zipfile.ZipFile(src) as z:
        entries = [(i.filename.replace("tensors/", "renamed_top/"), z.read(i)) for i in z.infolist()]
    out, central = b"", b""
    for name, data in entries:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        packed = packer.compress(data) + packer.flush()
        crc, offset, encoded = zlib.crc32(data), len(out), name.encode()
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(packed), len(data), len(encoded), 0)
        out += encoded + packed
        zip64 = struct.pack("<HHQQQ", 1, 24, len(data), len(packed), offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 8, 0, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                               len(encoded), len(zip64), 0, 0, 0, 0, 0xFFFFFFFF)
        central += encoded + zip64
    cd_offset, eocd64_offset = len(out), len(out) + len(central)
    out += central
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(entries), len(entries), len(central), cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, eocd64_offset, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with open(dst, "wb") as f:
        f.write(out)


def npy_fixtures():
    """Each array is np.arange(n) mapped through the test's formula for its dtype."""
    for descr in ["<f4", "<f8", "<f2", "<i8", "<i4", "|i1", "|u1"]:
        values = (np.arange(6) * 3 - 5).astype(descr).reshape(2, 3)
        np.save(os.path.join(OUT, "%s.npy" % descr[1:]), values)
    np.save(os.path.join(OUT, "b1.npy"), np.array([[True, False, False], [True, True, False]]))
    np.save(os.path.join(OUT, "fortran.npy"), np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
    np.save(os.path.join(OUT, "scalar.npy"), np.array(2.5, dtype="<f8"))
    np.save(os.path.join(OUT, "empty.npy"), np.zeros((0, 3), dtype="<f4"))
    np.save(os.path.join(OUT, "big_endian.npy"), np.arange(3, dtype=">f4"))
    for version in [(2, 0), (3, 0)]:
        with open(os.path.join(OUT, "v%d.npy" % version[0]), "wb") as f:
            np.lib.format.write_array(f, np.arange(4, dtype="<i4"), version=version)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    net_fixtures()
    tensors_fixture()
    npy_fixtures()
