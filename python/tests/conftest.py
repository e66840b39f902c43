# pytest setup: the tests import the ember package of the build (meson test puts
# <build>/python on PYTHONPATH); needs_fashion skips what needs the FashionMNIST files.
import os

import pytest

FASHION_ROOT = "/usr/share/datasets/fashion-mnist"


def fashion_available():
    return os.path.exists(os.path.join(FASHION_ROOT, "train-images-idx3-ubyte.gz")) or \
        os.path.exists(os.path.join(FASHION_ROOT, "train-images-idx3-ubyte"))


needs_fashion = pytest.mark.skipif(not fashion_available(), reason="dataset-fashion-mnist is not installed")
