#!/usr/bin/env python3
"""Trains a small network through nnvm's C API from Python, with ctypes only.

    python3 examples/c_api/train.py build/libnnvm.so [--steps N]

Fits y = sin(3 x0) + x1^2 with a 2-32-1 network and Adam, through ops by
name (ONNX's Gemm, Relu, Sub, Mul, ReduceMean), autograd and an optimizer;
exits non-zero unless the loss fell to a tenth. docs/C_API.md.
"""
import argparse
import ctypes as C
import math
import sys

OK = 0
FLOAT32 = 7
ATTR_INT = 0

Tensor = C.c_void_p
Optimizer = C.c_void_p


class Attr(C.Structure):
    """nnvm_attr, field for field."""
    _fields_ = [("name", C.c_char_p), ("kind", C.c_int), ("i", C.c_int64), ("f", C.c_double),
                ("s", C.c_char_p), ("ints", C.POINTER(C.c_int64)), ("floats", C.POINTER(C.c_double)),
                ("strings", C.POINTER(C.c_char_p)), ("count", C.c_size_t), ("tensor", Tensor)]


class NNVM:
    """The library, each call checked: a failure raises with nnvm's message."""

    def __init__(self, path):
        self.lib = C.CDLL(path)
        lib = self.lib
        lib.nnvm_last_error.restype = C.c_char_p
        lib.nnvm_c_api_version.restype = C.c_int
        lib.nnvm_tensor_free.argtypes = [Tensor]
        lib.nnvm_tensor_free.restype = None
        lib.nnvm_optimizer_free.argtypes = [Optimizer]
        lib.nnvm_optimizer_free.restype = None
        lib.nnvm_op.argtypes = [C.c_char_p, C.POINTER(Tensor), C.c_size_t, C.POINTER(Attr), C.c_size_t,
                                C.POINTER(Tensor), C.c_size_t]
        if lib.nnvm_c_api_version() != 1:
            raise RuntimeError(f"libnnvm's C API is version {lib.nnvm_c_api_version()}; this script speaks 1")

    def __call__(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != OK:
            raise RuntimeError(f"{name}: {self.lib.nnvm_last_error().decode()}")

    def tensor(self, values, shape):
        data = (C.c_float * len(values))(*values)
        dims = (C.c_int64 * len(shape))(*shape)
        out = Tensor()
        self("nnvm_tensor_from_data", data, dims, C.c_int64(len(shape)), FLOAT32, C.byref(out))
        return out

    def randn(self, shape):
        dims = (C.c_int64 * len(shape))(*shape)
        out = Tensor()
        self("nnvm_tensor_randn", dims, C.c_int64(len(shape)), FLOAT32, C.byref(out))
        return out

    def op(self, op_type, inputs, **attrs):
        ins = (Tensor * len(inputs))(*inputs)
        attr_list = (Attr * max(len(attrs), 1))()
        for k, (name, value) in enumerate(attrs.items()):
            attr_list[k].name = name.encode()
            attr_list[k].kind = ATTR_INT
            attr_list[k].i = value
        out = Tensor()
        self("nnvm_op", op_type.encode(), ins, len(inputs), attr_list, len(attrs), C.byref(out), 1)
        return out

    def item(self, t):
        value = C.c_double()
        self("nnvm_tensor_item", t, C.byref(value))
        return value.value

    def free(self, *tensors):
        for t in tensors:
            self.lib.nnvm_tensor_free(t)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("library", help="path to libnnvm.so")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    nn = NNVM(args.library)

    batch, hidden = 64, 32
    xs, ys = [], []
    for i in range(batch):
        x0 = i / batch * 2 - 1
        x1 = (i * 37) % batch / batch * 2 - 1
        xs += [x0, x1]
        ys.append(math.sin(3 * x0) + x1 * x1)
    x = nn.tensor(xs, [batch, 2])
    y = nn.tensor(ys, [batch, 1])
    nn("nnvm_manual_seed", C.c_uint64(7))
    params = [nn.randn([hidden, 2]), nn.tensor([0.0] * hidden, [hidden]), nn.randn([1, hidden]),
              nn.tensor([0.0], [1])]
    for p in params:
        nn("nnvm_tensor_set_requires_grad", p, 1)
    adam = Optimizer()
    nn("nnvm_optimizer_adam", (Tensor * 4)(*params), C.c_size_t(4), C.c_double(0.02), C.c_double(0.9),
       C.c_double(0.999), C.c_double(1e-8), C.c_double(0.0), C.byref(adam))

    first = last = None
    for _ in range(args.steps):
        nn("nnvm_optimizer_zero_grad", adam)
        h = nn.op("Gemm", [x, params[0], params[1]], transB=1)
        a = nn.op("Relu", [h])
        prediction = nn.op("Gemm", [a, params[2], params[3]], transB=1)
        diff = nn.op("Sub", [prediction, y])
        square = nn.op("Mul", [diff, diff])
        loss = nn.op("ReduceMean", [square], keepdims=0)
        nn("nnvm_tensor_backward", loss, None, 0)
        nn("nnvm_optimizer_step", adam)
        last = nn.item(loss)
        first = last if first is None else first
        nn.free(h, a, prediction, diff, square, loss)

    try:
        nn("nnvm_op", b"NoSuchOp", None, 0, None, 0, None, 0)
    except RuntimeError as e:
        print(f"an unknown op is refused: {e}")
    nn.lib.nnvm_optimizer_free(adam)
    nn.free(x, y, *params)
    print(f"loss {first:.5f} -> {last:.5f} after {args.steps} steps")
    return 0 if last < first / 10 else 1


if __name__ == "__main__":
    sys.exit(main())
