# ember.Tensor from Python: factories, dtypes, devices, indexing, operators,
# in-place ops, autograd and no_grad, each against values worked out by hand.
import math
import threading

import pytest

import ember


def test_factories_shapes_and_dtypes():
    assert ember.zeros(2, 3).shape == (2, 3)
    assert ember.zeros((2, 3)).shape == (2, 3)
    assert ember.ones([4]).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert ember.zeros(2, dtype=ember.int64).dtype == ember.int64
    assert ember.full((2,), 7).tolist() == [7, 7]
    assert ember.full((2,), 7).dtype == ember.int64
    assert ember.full((2,), 0.5).dtype == ember.float32
    assert ember.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert ember.arange(5).dtype == ember.int64
    assert ember.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert ember.arange(0, 6, 2, dtype=ember.float32).tolist() == [0.0, 2.0, 4.0]
    assert ember.randn(3, 4).shape == (3, 4)
    assert ember.zeros_like(ember.ones(2, 2, dtype=ember.float64)).dtype == ember.float64


def test_tensor_from_nested_lists():
    t = ember.tensor([[1, 2, 3], [4, 5, 6]])
    assert t.dtype == ember.int64 and t.shape == (2, 3)
    assert t.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert ember.tensor([1.5, 2]).dtype == ember.float32
    assert ember.tensor([True, False]).dtype == ember.bool
    assert ember.tensor(3.5).shape == () and ember.tensor(3.5).item() == 3.5
    assert ember.tensor([1, 2], dtype=ember.float64).dtype == ember.float64
    with pytest.raises(ValueError):
        ember.tensor([[1, 2], [3]])


def test_dtype_names_and_aliases():
    assert repr(ember.float32) == "ember.float32"
    assert str(ember.int64) == "ember.int64"
    assert ember.float is ember.float32 and ember.long is ember.int64 and ember.half is ember.float16
    t = ember.ones(2)
    assert t.half().dtype == ember.float16
    assert t.to(ember.float64).dtype == ember.float64
    assert t.to(dtype=ember.int32).dtype == ember.int32
    assert t.long().dtype == ember.int64


def test_device():
    t = ember.ones(2)
    assert str(t.device) == "cpu"
    assert t.device == ember.device("cpu")
    assert t.device.type == "cpu"
    assert t.to("cpu").device == "cpu"
    assert t.cpu().tolist() == [1.0, 1.0]
    assert ember.cuda.is_available() == (ember.cuda.device_count() > 0)
    assert repr(ember.device("cuda:1")) == "device(type='cuda', index=1)"


def test_item_and_scalars():
    assert ember.tensor([2.5]).item() == 2.5
    assert ember.tensor([3]).item() == 3 and isinstance(ember.tensor([3]).item(), int)
    assert ember.tensor(True).item() is True
    assert float(ember.tensor(1.5)) == 1.5
    assert int(ember.tensor(4)) == 4


def test_indexing_and_slicing():
    t = ember.arange(24).reshape(2, 3, 4)
    assert t[1].tolist() == [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]
    assert t[0, 2].tolist() == [8, 9, 10, 11]
    assert t[0, 2, 3].item() == 11
    assert t[:, 1, ::2].tolist() == [[4, 6], [16, 18]]
    assert t[..., 1].tolist() == [[1, 5, 9], [13, 17, 21]]
    assert t[-1, -1, -1].item() == 23
    assert t[None].shape == (1, 2, 3, 4)
    assert t[:, None, 0].shape == (2, 1, 4)
    assert t[1:, 1:3].shape == (1, 2, 4)


def test_setitem_writes_through_views():
    t = ember.zeros(3, 4)
    t[1] = 5.0
    t[:, 0] = ember.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [[1, 0, 0, 0], [2, 5, 5, 5], [3, 0, 0, 0]]


def test_operators_and_broadcasting():
    a = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = ember.tensor([10.0, 20.0])
    assert (a + b).tolist() == [[11, 22], [13, 24]]
    assert (a - 1).tolist() == [[0, 1], [2, 3]]
    assert (1 - a).tolist() == [[0, -1], [-2, -3]]
    assert (2 * a).tolist() == [[2, 4], [6, 8]]
    assert (a / 2).tolist() == [[0.5, 1], [1.5, 2]]
    assert (1 / ember.tensor([4.0])).tolist() == [0.25]
    assert (a ** 2).tolist() == [[1, 4], [9, 16]]
    assert (a @ a).tolist() == [[7, 10], [15, 22]]
    assert (-a).tolist() == [[-1, -2], [-3, -4]]
    assert (a > 2).tolist() == [[False, False], [True, True]]
    assert (a == 2).dtype == ember.bool
    # int tensor with a Python int stays int; with a float it becomes float32 (PyTorch's promotion)
    i = ember.tensor([1, 2])
    assert (i + 1).dtype == ember.int64
    assert (i + 0.5).dtype == ember.float32


def test_inplace_ops_return_self():
    t = ember.ones(3)
    u = t.add_(1)
    assert u is t and t.tolist() == [2, 2, 2]
    t += 1
    t *= ember.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [3, 6, 9]
    t.zero_()
    assert t.tolist() == [0, 0, 0]
    assert t.fill_(2) is t


def test_reductions_with_torch_keywords():
    a = ember.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    assert a.sum().item() == 21
    assert a.sum(dim=0).tolist() == [5, 7, 9]
    assert a.sum(1, keepdim=True).shape == (2, 1)
    assert a.mean(dim=(0, 1)).item() == 3.5
    assert a.argmax(dim=1).tolist() == [1, 2]
    values, indices = a.max(dim=1)
    assert values.tolist() == [5, 6] and indices.tolist() == [1, 2]
    assert a.max().item() == 6
    assert ember.argmax(a, dim=0).tolist() == [1, 0, 1]
    sm = a.softmax(dim=1).sum(dim=1).tolist()
    assert all(abs(s - 1) < 1e-6 for s in sm)
    assert abs(a.var().item() - 3.5) < 1e-6  # unbiased: sum((x-3.5)^2)/5 = 17.5/5


def test_views_share_memory():
    t = ember.zeros(2, 3)
    v = t.view(6)
    v[4] = 1.0
    assert t[1, 1].item() == 1.0
    assert t.transpose(0, 1).shape == (3, 2)
    assert t.permute(1, 0).shape == (3, 2)
    assert t.unsqueeze(0).shape == (1, 2, 3)
    assert t.flatten().shape == (6,)
    assert t.reshape(-1, 2).shape == (3, 2)


def test_autograd_backward_and_grad():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x * 3).sum()
    assert y.grad_fn is not None and x.is_leaf and not y.is_leaf
    y.backward()
    assert x.grad.tolist() == [6.0, 12.0, 18.0]  # d(3x^2)/dx = 6x
    x.grad = None
    assert x.grad is None
    z = x.exp().sum()
    z.backward()
    assert [round(g, 4) for g in x.grad.tolist()] == [round(math.exp(v), 4) for v in (1.0, 2.0, 3.0)]
    assert not x.detach().requires_grad


def test_no_grad_context_and_decorator():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad
    assert (x * 2).requires_grad
    with ember.no_grad():
        with ember.enable_grad():
            assert (x * 2).requires_grad


def test_manual_seed_repeats_draws():
    ember.manual_seed(123)
    a = ember.randn(5).tolist()
    ember.manual_seed(123)
    assert ember.randn(5).tolist() == a


def test_grad_mode_is_per_thread():
    seen = []
    with ember.no_grad():
        t = threading.Thread(target=lambda: seen.append(ember.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_free_functions():
    a = ember.tensor([1.0, -2.0])
    assert ember.relu(a).tolist() == [1.0, 0.0]
    assert ember.cat([a, a]).tolist() == [1.0, -2.0, 1.0, -2.0]
    assert ember.stack([a, a], dim=1).shape == (2, 2)
    assert ember.where(a > 0, a, 0.0).tolist() == [1.0, 0.0]
    assert ember.clamp(a, min=-1.0).tolist() == [1.0, -1.0]
    assert ember.matmul(ember.ones(2, 3), ember.ones(3, 4)).shape == (2, 4)


def test_post_accumulate_grad_hook_runs_python_inside_backward():
    p = ember.ones(3, requires_grad=True)
    seen = []
    p.register_post_accumulate_grad_hook(lambda leaf: seen.append(leaf.grad.tolist()))
    (p * 2).sum().backward()
    assert seen == [[2.0, 2.0, 2.0]]


def test_size_and_dims_by_pytorch_keywords():
    t = ember.arange(6)
    assert ember.zeros(size=(2, 3)).shape == (2, 3)
    assert t.view(size=(2, 3)).shape == (2, 3)
    assert t.reshape(shape=(3, 2)).shape == (3, 2)
    assert t.view(2, 3).permute(dims=(1, 0)).shape == (3, 2)
    assert ember.ones(1, 3).expand(size=(2, 3)).shape == (2, 3)
    assert t.view(2, 3).transpose(dim0=0, dim1=1).shape == (3, 2)
    assert t.view(2, 3).sum(dim=1, keepdim=True).shape == (2, 1)
    assert t.unsqueeze(dim=0).shape == (1, 6)
