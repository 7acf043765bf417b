#!/usr/bin/env python3
"""Prints the PyTorch values that tests/kernels/interpolate_modes_test.cpp embeds
(kLinear8 ... kArea5d, in that order): torch.nn.functional.interpolate in float64
on inputs of ((i * 7) mod 11) - 5, the test's fixture_input. The test writes them
to 12 significant digits.

Run: python3 tests/data/make_interpolate_fixtures.py   (needs torch)
"""
import torch
import torch.nn.functional as F


def fixture_input(shape):
    n = 1
    for s in shape:
        n *= s
    return (((torch.arange(n) * 7) % 11) - 5).to(torch.float64).reshape(shape)


CASES = [
    ("kLinear8", [1, 2, 5], dict(size=[8], mode="linear", align_corners=False)),
    ("kLinear8Corners", [1, 2, 5], dict(size=[8], mode="linear", align_corners=True)),
    ("kLinearHalf", [1, 2, 5], dict(scale_factor=[0.5], mode="linear", align_corners=False)),
    ("kBicubic7x3", [1, 1, 4, 5], dict(size=[7, 3], mode="bicubic", align_corners=False)),
    ("kBicubic7x3Corners", [1, 1, 4, 5], dict(size=[7, 3], mode="bicubic", align_corners=True)),
    ("kBicubicScale", [1, 1, 3, 4], dict(scale_factor=[1.5, 1.5], mode="bicubic", align_corners=False)),
    ("kTrilinear3x5x2", [1, 1, 2, 3, 4], dict(size=[3, 5, 2], mode="trilinear", align_corners=False)),
    ("kTrilinear3x5x2Corners", [1, 1, 2, 3, 4], dict(size=[3, 5, 2], mode="trilinear", align_corners=True)),
    ("kArea4d", [1, 2, 5, 7], dict(size=[3, 4], mode="area")),
    ("kArea3d", [1, 1, 7], dict(size=[3], mode="area")),
    ("kArea5d", [1, 1, 2, 3, 5], dict(size=[1, 2, 3], mode="area")),
]

for name, shape, options in CASES:
    out = F.interpolate(fixture_input(shape), **options)
    values = ", ".join("%.12g" % (0.0 if abs(v) < 1e-12 else v) for v in out.flatten().tolist())
    print("constexpr double %s[] = {%s};  // %s" % (name, values, list(out.shape)))
