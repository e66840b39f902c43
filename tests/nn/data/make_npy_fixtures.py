#!/usr/bin/env python3
"""Writes the .npy fixtures tests/nn/test_npy.cpp reads, with NumPy itself, so
that Ember's reader is checked against the format's own writer:
  npy_f4_2x3.npy       float32 [[0.5, -1, 2], [3.25, -0.125, 1e-3]]
  npy_f8_fortran.npy   float64 2x3 arange(6) stored in Fortran order
  npy_i8_scalar.npy    int64 0-d array 42
  npy_b1_4.npy         bool [True, False, False, True]
  npy_f2_3.npy         float16 [1, -2.5, 65504]
  npy_i4_v2.npy        int32 arange(5), format version 2.0
  npy_u1_empty.npy     uint8 shape (0, 3)
Run from this folder: /usr/bin/python3 make_npy_fixtures.py"""
import numpy as np

np.save("npy_f4_2x3.npy", np.array([[0.5, -1, 2], [3.25, -0.125, 1e-3]], dtype=np.float32))
np.save("npy_f8_fortran.npy", np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3)))
np.save("npy_i8_scalar.npy", np.array(42, dtype=np.int64))
np.save("npy_b1_4.npy", np.array([True, False, False, True]))
np.save("npy_f2_3.npy", np.array([1, -2.5, 65504], dtype=np.float16))
with open("npy_i4_v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.arange(5, dtype=np.int32), version=(2, 0))
np.save("npy_u1_empty.npy", np.zeros((0, 3), dtype=np.uint8))
