#!/usr/bin/env python3
"""BM_CnnTrainStep's step (the demo CNN, Adam, batch 64) in PyTorch (a measuring tool): python3 bench/pytorch/cnn_step.py THREADS"""
import torch, time, sys
import torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(int(sys.argv[1])); torch.manual_seed(0)
class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.conv1=nn.Conv2d(1,32,3,padding=1); s.conv2=nn.Conv2d(32,64,3,padding=1); s.fc1=nn.Linear(64*49,128); s.fc2=nn.Linear(128,10)
    def forward(s,x):
        h=F.max_pool2d(F.relu(s.conv1(x)),2); h=F.max_pool2d(F.relu(s.conv2(h)),2); return s.fc2(F.relu(s.fc1(h.flatten(1))))
m=Net(); opt=torch.optim.Adam(m.parameters(),1e-3)
x=torch.randn(64,1,28,28); y=torch.randint(0,10,(64,))
def step():
    opt.zero_grad(); loss=F.cross_entropy(m(x),y); loss.backward(); opt.step()
for _ in range(10): step()
ts=[]
for r in range(7):
    t0=time.perf_counter(); n=20
    for _ in range(n): step()
    ts.append((time.perf_counter()-t0)/n*1e3)
ts.sort(); print("torch cnn step ms median %.2f min %.2f" % (ts[3], ts[0]))
