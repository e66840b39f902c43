# NumPy round trips: from_numpy and numpy() share memory both ways for contiguous
# CPU data; tensor() and as_tensor copy or share as PyTorch's do.
import gc

import numpy as np
import pytest

import ember


@pytest.mark.parametrize("np_dtype,dtype", [(np.float32, ember.float32), (np.float64, ember.float64),
                                            (np.float16, ember.float16), (np.int64, ember.int64),
                                            (np.int32, ember.int32), (np.int8, ember.int8),
                                            (np.uint8, ember.uint8), (np.bool_, ember.bool)])
def test_round_trip_every_dtype(np_dtype, dtype):
    a = (np.arange(12) % 3).astype(np_dtype).reshape(3, 4)
    t = ember.from_numpy(a)
    assert t.dtype == dtype and t.shape == (3, 4)
    assert t.tolist() == a.tolist()
    back = t.numpy()
    assert back.dtype == a.dtype and np.array_equal(back, a)


def test_from_numpy_shares_memory():
    a = np.zeros((2, 3), dtype=np.float32)
    t = ember.from_numpy(a)
    a[1, 2] = 7.0
    assert t[1, 2].item() == 7.0
    t[0, 0] = 3.0
    assert a[0, 0] == 3.0
    assert t.data_ptr() == a.ctypes.data


def test_numpy_shares_memory_and_keeps_tensor_alive():
    t = ember.arange(6, dtype=ember.float32)
    a = t.numpy()
    t[0] = 42.0
    assert a[0] == 42.0
    del t
    gc.collect()
    assert a.tolist() == [42.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_from_numpy_keeps_array_alive():
    t = ember.from_numpy(np.arange(5, dtype=np.int64))
    gc.collect()
    assert t.tolist() == [0, 1, 2, 3, 4]


def test_strided_array_is_viewed_with_its_strides():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    t = ember.from_numpy(a)
    assert t.shape == (3, 2) and t.stride() == (4, 2)
    assert t.tolist() == a.tolist()


def test_negative_strides_refused():
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(np.arange(4.0)[::-1])


def test_numpy_refuses_requires_grad():
    with pytest.raises(TypeError, match="requires grad"):
        ember.ones(2, requires_grad=True).numpy()
    assert ember.ones(2, requires_grad=True).detach().numpy().tolist() == [1.0, 1.0]


def test_tensor_copies_and_as_tensor_shares():
    a = np.ones(3, dtype=np.float32)
    copied = ember.tensor(a)
    shared = ember.as_tensor(a)
    a[0] = 5.0
    assert copied[0].item() == 1.0
    assert shared[0].item() == 5.0
    assert ember.as_tensor(a, dtype=ember.float64).dtype == ember.float64


def test_numpy_array_protocol():
    t = ember.tensor([[1, 2], [3, 4]])
    assert np.asarray(t).tolist() == [[1, 2], [3, 4]]
    assert (np.asarray(t) * 2).sum() == 20
