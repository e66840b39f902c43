"""A tour of Ember from Python, for learners: run it line by line in a Python prompt
(``python3 -i examples/python/tour.py``) or whole. Each step prints what it does and
the result; the names are PyTorch's (docs/python.md, docs/tensors.md)."""
import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F


def show(what, value):
    print(f"# {what}\n{value}\n")


ember.manual_seed(0)
a = ember.tensor([[1., 2., 3.], [4., 5., 6.]])
show("a = ember.tensor([[1., 2., 3.], [4., 5., 6.]])", a)
show("a.shape, a.dtype, a.device", (a.shape, a.dtype, a.device))
show("a.t()  (a view: same storage, swapped strides)", a.t())
show("a[:, 1]  (slicing is a view too)", a[:, 1])
show("a * 10 + 1", a * 10 + 1)
show("a + ember.tensor([100., 200., 300.])  (broadcast over rows)", a + ember.tensor([100., 200., 300.]))
show("a @ a.t()", a @ a.t())
show("a.sum(dim=1)", a.sum(dim=1))
show("a.mean(dim=0, keepdim=True)", a.mean(dim=0, keepdim=True))
values, indices = a.max(dim=1)
show("a.max(dim=1): values, indices", (values, indices))
show("a.softmax(dim=1)", a.softmax(dim=1))
show("ember.arange(0, 1, 0.125)", ember.arange(0, 1, 0.125))
show("ember.randn(2, 4, dtype=ember.float16)  (seeded)", ember.randn(2, 4, dtype=ember.float16))

# NumPy: from_numpy and numpy() share memory (no copy).
arr = np.zeros(3, dtype=np.float32)
t = ember.from_numpy(arr)
arr[0] = 7
show("t = ember.from_numpy(arr); arr[0] = 7; t", t)
show("t.numpy()", t.numpy())

# Autograd: operations on tensors that require grad record a graph; backward walks it.
x = ember.tensor([1., 2., 3.], requires_grad=True)
y = (x ** 2).sum()
y.backward()
show("x = [1, 2, 3] (requires_grad); (x ** 2).sum().backward(); x.grad  (2x)", x.grad)
with ember.no_grad():
    show("inside ember.no_grad(): (x * 2).requires_grad", (x * 2).requires_grad)

# A module written in Python: assigning layers registers them.
class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(in_features=2, out_features=8)
        self.fc2 = nn.Linear(in_features=8, out_features=2)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


net = TwoLayer()
show("net", net)
show("[name for name, _ in net.named_parameters()]", [n for n, _ in net.named_parameters()])

# Train it for a moment: which points lie in the first or third quadrant?
points = ember.randn(512, 2)
labels = (points[:, 0] * points[:, 1] > 0).long()
optimizer = ember.optim.Adam(net.parameters(), lr=0.01)
for step in range(200):
    loss = F.cross_entropy(net(points), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
with ember.no_grad():
    accuracy = net(points).argmax(dim=1).eq(labels).float().mean().item()
show("after 200 Adam steps: loss, accuracy", (round(loss.item(), 4), round(accuracy, 4)))

# Errors are Python exceptions with Ember's messages.
try:
    ember.ones(2, 3) + ember.ones(4)
except ValueError as e:
    show(f"ember.ones(2, 3) + ember.ones(4) raises {type(e).__name__}", e)
