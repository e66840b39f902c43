// ember.distributed: the default process group over MPI (launched with
// `mpirun -np N python3 script.py`), its collectives and DistributedDataParallel,
// as torch.distributed names them. Collectives and DDP's gradient averaging run
// without the GIL. Absent (ember.distributed.is_available() is False) when Ember
// was built without MPI.
#include "bindings.h"

namespace ember::python {

void init_dist(py::module_& m) {
  py::module_ d = m.def_submodule("distributed", "data parallelism over MPI");
#if EMBER_HAVE_MPI
  d.def("is_available", [] { return true; });
  py::enum_<dist::ReduceOp>(d, "ReduceOp")
      .value("SUM", dist::ReduceOp::Sum)
      .value("AVG", dist::ReduceOp::Avg)
      .value("MAX", dist::ReduceOp::Max);
  d.def("init_process_group", [](const std::string& backend) {
    if (backend != "mpi" && backend != "nccl")
      throw ValueError("init_process_group: backend must be 'mpi' or 'nccl', got '" + backend + "'");
    nogil([&] { dist::init_process_group(backend == "mpi" ? dist::Backend::MPI : dist::Backend::NCCL); return 0; });
  }, py::arg("backend") = "mpi");
  d.def("is_initialized", &dist::is_initialized);
  d.def("destroy_process_group", [] { nogil([] { dist::destroy_process_group(); return 0; }); });
  d.def("get_rank", &dist::get_rank);
  d.def("get_world_size", &dist::get_world_size);
  d.def("all_reduce", [](const Tensor& t, dist::ReduceOp op) { nogil([&] { dist::all_reduce(t, op); return 0; }); },
        py::arg("tensor"), py::arg("op") = dist::ReduceOp::Sum);
  d.def("broadcast", [](const Tensor& t, int src) { nogil([&] { dist::broadcast(t, src); return 0; }); },
        py::arg("tensor"), py::arg("src") = 0);
  d.def("barrier", [] { nogil([] { dist::barrier(); return 0; }); });
  // Keeps the wrapped module (possibly written in Python) alive with the wrapper.
  py::class_<dist::DistributedDataParallel, nn::Module, std::shared_ptr<dist::DistributedDataParallel>>(
      d, "DistributedDataParallel")
      .def(py::init([](std::shared_ptr<nn::Module> module, double bucket_cap_mb, bool find_unused_parameters,
                       bool broadcast_buffers) {
        dist::DDPOptions o;
        o.bucket_cap_mb = bucket_cap_mb;
        o.find_unused_parameters = find_unused_parameters;
        o.broadcast_buffers = broadcast_buffers;
        py::gil_scoped_release release;
        return std::make_shared<dist::DistributedDataParallel>(std::move(module), o);
      }), py::keep_alive<1, 2>(), py::arg("module"), py::arg("bucket_cap_mb") = 25.0,
          py::arg("find_unused_parameters") = false, py::arg("broadcast_buffers") = true)
      .def_property_readonly("module", [](py::object self) {
        // The wrapped module is the first child; return the Python object the user passed.
        return self.cast<dist::DistributedDataParallel&>().named_children().front().second;
      });
#else
  d.def("is_available", [] { return false; });
#endif
}

}  // namespace ember::python
