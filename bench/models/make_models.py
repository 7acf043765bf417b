#!/usr/bin/env python3
"""Writes the model benchmarks' ONNX files (docs/BENCHMARKS.md, "Models").

    python3 bench/models/make_models.py OUT_DIR

Needs torch and onnx from PyPI (measuring tools only, never the product's
build). Each model has a symbolic batch dimension, random weights from a
fixed seed, and opset 17:
  resnet18.onnx   a ResNet-18-sized CNN, input [batch, 3, 224, 224]
  bert_layer.onnx a BERT-base-sized encoder layer (hidden 768, 12 heads,
                  FFN 3072), input [batch, 128, 768]
  gpt_block.onnx  a small GPT block (hidden 512, 8 heads, causal attention,
                  tanh GELU), input [batch, 128, 512]
"""
import math
import os
import sys

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Attention(nn.Module):
    def __init__(self, d, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.out(y)


class BertLayer(nn.Module):  # post-norm, erf GELU
    def __init__(self, d=768, heads=12, ffn=3072):
        super().__init__()
        self.attn = Attention(d, heads, causal=False)
        self.ln1 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.ff(x))


class GptBlock(nn.Module):  # pre-norm, tanh GELU, causal
    def __init__(self, d=512, heads=8):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads, causal=True)
        self.ln2 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ff(self.ln2(x))


def export(model, example, path):
    model.eval()
    # BatchNorm statistics that are not the identity, as a trained model's.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    torch.onnx.export(model, (example,), path, input_names=["x"], output_names=["y"], opset_version=17,
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dynamo=False)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    export(ResNet18(), torch.randn(1, 3, 224, 224), os.path.join(out, "resnet18.onnx"))
    export(BertLayer(), torch.randn(1, 128, 768), os.path.join(out, "bert_layer.onnx"))
    export(GptBlock(), torch.randn(1, 128, 512), os.path.join(out, "gpt_block.onnx"))


if __name__ == "__main__":
    main()
