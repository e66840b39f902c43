# Indexing with tensors, lists and NumPy arrays (t[idx], t[idx] = v) against NumPy's
# advanced indexing, which PyTorch's follows wherever no int stands between index
# tensors, and against PyTorch 1.13's own results where the two differ
# (data/indexing_torch.json, written by make_indexing_reference.py).
import json
import os

import numpy as np
import pytest

import ember

A = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5) - 50

# Each entry: an index as NumPy takes it; as_ember turns its arrays into tensors.
CASES = [
    (1, 0),                                               # ints alone: a view
    [0, 1, 1],
    (slice(None), [2, -1]),
    (slice(None), [[0], [2]], [1, 3]),                    # adjacent, broadcast to [2, 2]
    ([1, 0], slice(None), [3, 3]),                        # separated: the picked dims go first
    ([0, 1], slice(None), slice(None), [4, 0]),
    (Ellipsis, [4, 0, 1]),
    (slice(None), None, [1, 2]),
    (slice(1, 3), [0, 2]),
    (A[:, :, 0, 0] > -40,),                               # a 2-D mask
    (slice(None), A[0, :, 0, 0] > -45),                   # a 1-D mask on dim 1
    (A > 0,),                                             # a full mask
    (np.array([1, 0]), slice(None), np.array([[0], [3]])),
    ([],),                                                # an empty index
    (slice(None), np.zeros(3, dtype=bool)),               # nothing picked
]


def as_ember(idx, kind):
    def one(x):
        if isinstance(x, list) or isinstance(x, np.ndarray):
            arr = np.array(x)
            if arr.dtype != bool:
                arr = arr.astype(np.int64 if kind != "int32" else np.int32)
            if kind == "list":
                return arr.tolist() if arr.size else []
            if kind == "numpy":
                return arr
            return ember.tensor(arr) if arr.size else ember.tensor(arr.astype(np.int64))
        return x
    if isinstance(idx, tuple):
        return tuple(one(x) for x in idx)
    return one(idx)


def numpy_index(idx):
    def one(x):
        return np.array(x, dtype=np.int64 if x == [] else None) if isinstance(x, list) else x
    return tuple(one(x) for x in idx) if isinstance(idx, tuple) else one(idx)


@pytest.mark.parametrize("kind", ["tensor", "int32", "list", "numpy"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_getitem_matches_numpy(case, kind):
    idx = CASES[case]
    want = A[numpy_index(idx)]
    got = ember.tensor(A)[as_ember(idx, kind)]
    assert got.shape == want.shape
    assert np.array_equal(got.numpy(), want)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_setitem_matches_numpy(case):
    idx = CASES[case]
    want = A.copy()
    picked = want[numpy_index(idx)]
    values = (np.arange(picked.size, dtype=np.float32) + 1000).reshape(picked.shape)
    want[numpy_index(idx)] = values
    t = ember.tensor(A)
    t[as_ember(idx, "tensor")] = ember.tensor(values)
    assert np.array_equal(t.numpy(), want)
    # A scalar goes to every picked position.
    want = A.copy()
    want[numpy_index(idx)] = 7
    t = ember.tensor(A)
    t[as_ember(idx, "tensor")] = 7
    assert np.array_equal(t.numpy(), want)


def test_ints_apply_before_index_tensors_as_in_pytorch():
    t = ember.tensor(A)
    # PyTorch: t[0] first, then [:, :, [1, 2]] on the [3, 4, 5] view; NumPy would
    # give (2, 3, 4) with the int counted as an index array.
    got = t[0, :, :, [1, 2]]
    assert got.shape == (3, 4, 2)
    assert np.array_equal(got.numpy(), A[0][:, :, [1, 2]])


def test_masked_assignment_writes_through_a_view():
    t = ember.tensor(A)
    row = t[1]
    row[row > 0] = 0
    want = A.copy()
    want[1][want[1] > 0] = 0
    assert np.array_equal(t.numpy(), want)


def test_repeated_positions_take_the_last_value():
    t = ember.zeros(4)
    t[[1, 3, 1]] = ember.tensor([10.0, 20.0, 30.0])
    assert t.tolist() == [0.0, 30.0, 0.0, 20.0]


def test_gradient_through_an_index_adds_up_repeats():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 1.0]
    y = ember.tensor([[1.0, -2.0], [3.0, -4.0]], requires_grad=True)
    y[y > 0].sum().backward()
    assert y.grad.tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_indexing_errors():
    t = ember.zeros(3, 4)
    with pytest.raises(ember.IndexError, match=r"^index 3 is out of bounds for dimension 0 with size 3$"):
        t[[0, 3]]
    with pytest.raises(ember.IndexError, match=r"^too many indices for tensor of dimension 2$"):
        t[0, 0, [0]]
    with pytest.raises(ember.IndexError, match=r"^tensors used as indices must be long, int, byte or bool tensors$"):
        t[[0.5]]
    with pytest.raises(ember.IndexError, match=r"^The shape of the mask \[2\] at index 0 does not match"):
        t[ember.tensor([True, False])]
    with pytest.raises(ember.IndexError, match=r"^shape mismatch: indexing tensors could not be broadcast"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(ember.ShapeError, match=r"^shape mismatch: value tensor of shape \[3\] cannot be broadcast"):
        t[[0, 1]] = ember.zeros(3)
    with pytest.raises(TypeError, match="indexing with str is not supported"):
        t["a"]
    assert t.abs().sum().item() == 0.0  # nothing was written


def test_zero_dim_integer_indices_are_ints():
    t = ember.tensor(A)
    # A 0-dim integer tensor or array selects (a view), before the index tensors.
    assert t[ember.tensor(1)].shape == (3, 4, 5)
    assert t[np.array(1), np.array(2), np.array(3)].shape == (5,)
    assert t[ember.tensor(0), :, :, [1, 2]].shape == (3, 4, 2)
    t[ember.tensor(1)].add_(1000)
    assert t[1, 0, 0, 0].item() == A[1, 0, 0, 0] + 1000
    # Integer arrays of any width are positions.
    for dt in (np.int8, np.int16, np.uint16, np.uint32, np.int32):
        assert np.array_equal(t[np.array([1, 0], dt)].numpy(), t.numpy()[[1, 0]])


def test_true_false_and_lists_read_as_tuples():
    t = ember.tensor(A)
    assert t[True].shape == (1, 2, 3, 4, 5)
    assert t[False].shape == (0, 2, 3, 4, 5)
    assert t[:, True, 0].shape == (2, 1, 4, 5)
    # PyTorch 1.13 reads a short list holding a sequence or slice as a tuple.
    assert np.array_equal(t[[[0, 1], [1, 2]]].numpy(), A[[0, 1], [1, 2]])
    assert np.array_equal(t[[0, slice(None), 1]].numpy(), A[0, :, 1])
    s = ember.zeros(3)
    s[True] = 2
    assert s.tolist() == [2.0, 2.0, 2.0]


def test_value_leading_ones_are_dropped():
    t = ember.zeros(3)
    t[[0, 1]] = ember.ones(1, 2)
    t[2] = ember.full((1, 1), 5.0)
    assert t.tolist() == [1.0, 1.0, 5.0]


def test_assignment_through_an_index_keeps_autograd():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 2
    y[:, [1]] = 5
    (y * y).sum().backward()
    assert x.grad.tolist() == [[8.0, 0.0], [24.0, 0.0]]  # d(4 x^2)/dx where kept, 0 where written
    v = ember.tensor([7.0, 8.0], requires_grad=True)
    t = ember.zeros(3)
    t[[2, 0]] = v
    (t * ember.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert v.grad.tolist() == [100.0, 1.0]


def test_bad_values_and_indices_raise_typed_errors():
    t = ember.zeros(3, 4)
    for bad in (lambda: t.__setitem__(0, "x"), lambda: t.__setitem__([0], "ab"), lambda: t[["a"]],
                lambda: ember.tensor("x"), lambda: t.__setitem__([0], 1 + 2j)):
        with pytest.raises(TypeError, match=r"^ember.tensor: invalid data type '(str|complex)'$"):
            bad()
    with pytest.raises(ember.IndexError, match=r"^an index can only have a single ellipsis \('...'\)$"):
        t[..., 0, ...]
    e = ember.zeros(1, 4).expand(3, 4)
    with pytest.raises(ember.ValueError, match=r"^unsupported operation: more than one element of the written-to"):
        e[[0]] = 1
    assert t.abs().sum().item() == 0.0


def test_big_endian_arrays():
    t = ember.zeros(3)
    t[[0]] = np.array([1.5], ">f4")
    assert t.tolist() == [1.5, 0.0, 0.0]
    assert ember.tensor(np.array([1, 2], ">i8")).tolist() == [1, 2]
    assert ember.tensor(A)[np.array([1], ">i8")].shape == (1, 3, 4, 5)
    with pytest.raises(ValueError, match="byte order different from the native byte order"):
        ember.from_numpy(np.array([1.0], ">f4"))


def decode(x):
    if isinstance(x, int):
        return x
    if isinstance(x, list):
        return [decode(v) for v in x]
    if "bool" in x:
        return x["bool"]
    if "none" in x:
        return None
    if "ellipsis" in x:
        return Ellipsis
    if "slice" in x:
        return slice(*x["slice"])
    if "tensor0" in x:
        return ember.tensor(x["tensor0"])
    if "array" in x:
        return ember.tensor(np.array(x["array"], dtype=x["dtype"]))
    return decode(x["list"])


def torch_cases():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "indexing_torch.json")
    with open(path) as f:
        return json.load(f)["cases"]


@pytest.mark.parametrize("case", torch_cases(), ids=lambda c: json.dumps(c["index"])[:40])
def test_getitem_and_setitem_match_pytorch(case):
    # PyTorch 1.13's results, made by make_indexing_reference.py.
    idx = case["index"]
    idx = [decode(v) for v in idx["list_index"]] if isinstance(idx, dict) else tuple(decode(v) for v in idx)
    t = ember.arange(120, dtype=ember.float32).reshape(2, 3, 4, 5)
    got = t[idx]
    assert list(got.shape) == case["shape"]
    assert got.numpy().flatten().tolist() == case["values"]
    t[idx] = ember.arange(got.numel(), dtype=ember.float32).reshape(*got.shape) + 1000
    assert t.numpy().flatten().tolist() == case["after_set"]
