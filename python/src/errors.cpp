// Ember's error classes as Python exceptions, with the C++ message unchanged.
// Each derives from ember.Error and from the builtin a PyTorch user would catch
// (DeviceError is a RuntimeError, ShapeError a ValueError, ...); docs/errors.md
// lists the mapping.
#include "bindings.h"

namespace ember::python {

namespace {
// Created once; pybind11's translator raises these.
PyObject* g_error = nullptr;
PyObject* g_classes[10] = {};

PyObject* make_class(py::module_& m, const char* name, PyObject* builtin, const char* doc) {
  py::tuple bases = py::make_tuple(py::handle(g_error), py::handle(builtin));
  py::dict ns;
  ns["__module__"] = "ember";
  ns["__doc__"] = doc;
  py::object cls = py::reinterpret_borrow<py::object>((PyObject*)&PyType_Type)(name, bases, ns);
  m.attr(name) = cls;
  return cls.release().ptr();
}
}  // namespace

void init_errors(py::module_& m) {
  {
    py::dict ns;
    ns["__module__"] = "ember";
    ns["__doc__"] = "Base of every error Ember raises (ember::Error).";
    py::object base = py::reinterpret_borrow<py::object>((PyObject*)&PyType_Type)(
        "Error", py::make_tuple(py::handle(PyExc_RuntimeError)), ns);
    m.attr("Error") = base;
    g_error = base.release().ptr();
  }
  // Order matches the translator below.
  g_classes[0] = make_class(m, "DeviceError", PyExc_RuntimeError, "Operands or a layer on the wrong device.");
  g_classes[1] = make_class(m, "DTypeError", PyExc_TypeError, "A dtype an op does not accept.");
  g_classes[2] = make_class(m, "ShapeError", PyExc_ValueError, "Shapes that do not fit the op.");
  g_classes[3] = make_class(m, "IndexError", PyExc_IndexError, "An index or dim out of range.");
  g_classes[4] = make_class(m, "ValueError", PyExc_ValueError, "An argument out of range.");
  g_classes[5] = make_class(m, "NotImplementedError", PyExc_NotImplementedError,
                            "No kernel for this device and dtype.");
  g_classes[6] = make_class(m, "OutOfMemoryError", PyExc_MemoryError, "A device allocation failed.");
  g_classes[7] = make_class(m, "CudaError", PyExc_RuntimeError, "A CUDA library call failed.");
  g_classes[8] = make_class(m, "FormatError", PyExc_ValueError, "A bad or hostile file.");
  g_classes[9] = make_class(m, "DistError", PyExc_RuntimeError, "A distributed (MPI/NCCL) failure.");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DeviceError& e) { PyErr_SetString(g_classes[0], e.what());
    } catch (const DTypeError& e) { PyErr_SetString(g_classes[1], e.what());
    } catch (const ShapeError& e) { PyErr_SetString(g_classes[2], e.what());
    } catch (const IndexError& e) { PyErr_SetString(g_classes[3], e.what());
    } catch (const ValueError& e) { PyErr_SetString(g_classes[4], e.what());
    } catch (const NotImplementedError& e) { PyErr_SetString(g_classes[5], e.what());
    } catch (const OutOfMemoryError& e) { PyErr_SetString(g_classes[6], e.what());
    } catch (const CudaError& e) { PyErr_SetString(g_classes[7], e.what());
    } catch (const FormatError& e) { PyErr_SetString(g_classes[8], e.what());
    } catch (const DistError& e) { PyErr_SetString(g_classes[9], e.what());
    } catch (const Error& e) { PyErr_SetString(g_error, e.what());
    }
  });
}

}  // namespace ember::python
