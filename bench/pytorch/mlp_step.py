#!/usr/bin/env python3
"""BM_MlpTrainStep's step in PyTorch (a measuring tool): python3 bench/pytorch/mlp_step.py THREADS"""
import torch, time, sys
torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
B,I,H,O=256,1024,4096,1024
w1=(torch.randn(H,I)/I**0.5).requires_grad_(); b1=(torch.randn(H)/I**0.5).requires_grad_()
w2=(torch.randn(O,H)/H**0.5).requires_grad_(); b2=(torch.randn(O)/H**0.5).requires_grad_()
x=torch.randn(B,I); t=torch.randn(B,O)
def step():
    y=torch.nn.functional.linear(torch.nn.functional.gelu(torch.nn.functional.linear(x,w1,b1)),w2,b2)
    loss=torch.nn.functional.mse_loss(y,t); loss.backward()
    with torch.no_grad():
        for p in (w1,b1,w2,b2): p.sub_(p.grad, alpha=1e-2); p.grad=None
for _ in range(5): step()
ts=[]
for r in range(7):
    t0=time.perf_counter(); n=10
    for _ in range(n): step()
    ts.append((time.perf_counter()-t0)/n*1e3)
ts.sort(); print("torch mlp step ms median %.2f min %.2f" % (ts[3], ts[0]))
