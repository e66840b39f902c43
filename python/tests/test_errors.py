# Ember's errors arrive in Python as ember.<Class>, subclasses of the builtin a
# PyTorch user catches, with the C++ message unchanged (docs/errors.md).
import pytest

import ember


def test_classes_and_bases():
    assert issubclass(ember.Error, RuntimeError)
    assert issubclass(ember.DeviceError, RuntimeError)
    assert issubclass(ember.ShapeError, ValueError)
    assert issubclass(ember.DTypeError, TypeError)
    assert issubclass(ember.IndexError, IndexError)
    assert issubclass(ember.ValueError, ValueError)
    assert issubclass(ember.NotImplementedError, NotImplementedError)
    assert issubclass(ember.OutOfMemoryError, MemoryError)
    assert issubclass(ember.FormatError, ValueError)
    for cls in (ember.DeviceError, ember.ShapeError, ember.FormatError, ember.DistError, ember.CudaError):
        assert issubclass(cls, ember.Error)


def test_cpu_memory_limit():
    # A tensor past the limit raises ember.OutOfMemoryError (a MemoryError) with the
    # C++ message, charges nothing, and fits once the limit is lifted.
    held, before = ember.cpu_memory_allocated(), ember.cpu_memory_limit()
    ember.set_cpu_memory_limit(held + (1 << 20))
    try:
        assert ember.cpu_memory_limit() == held + (1 << 20)
        with pytest.raises(MemoryError) as e:
            ember.zeros(1 << 20)  # 4 MiB of float32
        assert type(e.value) is ember.OutOfMemoryError
        assert str(e.value) == (f"CPU out of memory: tried to allocate 4194304 bytes with {held} bytes already "
                                f"allocated, over the limit of {held + (1 << 20)} bytes (cpu_set_memory_limit)")
        assert ember.cpu_memory_allocated() == held
    finally:
        ember.set_cpu_memory_limit(before)
    t = ember.zeros(1 << 20)
    assert ember.cpu_memory_allocated() == held + 4194304
    del t
    assert ember.cpu_memory_allocated() == held


def test_shape_error_message():
    with pytest.raises(ember.ShapeError) as e:
        ember.ones(2, 3) + ember.ones(4)
    assert str(e.value) == ("The size of tensor a (3) must match the size of tensor b (4) "
                            "at non-singleton dimension 1")


def test_device_error_message():
    with pytest.raises(ember.DeviceError) as e:
        ember.ones(2) + ember.ones(2, device="meta")
    assert str(e.value) == "expected device cpu but got device meta"


def test_layer_device_error_message():
    conv = ember.nn.Conv2d(1, 2, 3)
    with pytest.raises(ember.DeviceError) as e:
        conv(ember.zeros(1, 1, 5, 5, device="meta"))
    assert str(e.value) == ("Expected object of device type cpu but got device type meta for argument #1 'self' "
                            "in call to conv2d_forward")


def test_index_error_message():
    with pytest.raises(IndexError) as e:
        ember.ones(2, 3)[5]
    assert type(e.value) is ember.IndexError
    assert str(e.value) == "select(): index 5 out of range for tensor of size [2, 3] at dimension 0"


def test_value_error_from_bad_device_string():
    with pytest.raises(ember.ValueError):
        ember.device("tpu")


def test_format_error_for_a_missing_file(tmp_path):
    with pytest.raises(ember.FormatError):
        ember.serialization.load_file(str(tmp_path / "missing.safetensors"))


@pytest.mark.skipif(ember.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_unavailable_message():
    msg = "CUDA is not available: Ember was built without CUDA support or no CUDA device is present"
    with pytest.raises(ember.DeviceError) as e:
        ember.ones(2).cuda()
    assert str(e.value) == msg
    with pytest.raises(ember.DeviceError):
        ember.zeros(2, device="cuda")
    with pytest.raises(ember.DeviceError):
        ember.nn.Linear(2, 2).to("cuda")


def test_exceptions_cross_cpp_containers_unchanged():
    class Raises(ember.nn.Module):
        def forward(self, x):
            raise KeyError("boom")

    class Mismatch(ember.nn.Module):
        def forward(self, x):
            return x + ember.ones(5)
    # The Python forward runs inside C++ Sequential::forward; its exception comes back as it was.
    with pytest.raises(KeyError, match="boom"):
        ember.nn.Sequential(ember.nn.Linear(2, 2), Raises())(ember.ones(1, 2))
    with pytest.raises(ember.ShapeError, match="must match the size of tensor b"):
        ember.nn.Sequential(Mismatch())(ember.ones(1, 2))
