// ember.utils.data's C++ side: DataLoader over two tensors (nn/data/dataloader.h),
// one epoch as a Python iterator of (inputs, targets), and the FashionMNIST files.
// Batches are made (or awaited from worker threads) without the GIL.
#include "bindings.h"

namespace ember::python {

namespace {

// One pass of a DataLoader as a Python iterator.
struct EpochIterator {
  explicit EpochIterator(data::DataLoader::Epoch e) : epoch(std::move(e)) {}
  data::DataLoader::Epoch epoch;
  data::DataLoader::Epoch::iterator it;
  bool started = false;

  py::tuple next() {
    {
      py::gil_scoped_release release;
      if (!started) {
        it = epoch.begin();
        started = true;
      } else if (!(it == std::default_sentinel)) {
        ++it;
      }
    }
    if (it == std::default_sentinel) throw py::stop_iteration();
    return py::make_tuple(it->inputs, it->targets);
  }
};

}  // namespace

void init_data(py::module_& m) {
  py::module_ d = m.def_submodule("data", "data loading");
  py::class_<EpochIterator>(d, "Epoch")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", &EpochIterator::next)
      .def("__len__", [](const EpochIterator& e) { return e.epoch.size(); });

  py::class_<data::DataLoader>(d, "DataLoader")
      .def(py::init([](Tensor inputs, Tensor targets, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last,
                       int num_workers, int prefetch_factor, int64_t num_replicas, int64_t rank) {
        data::DataLoaderOptions o;
        o.batch_size = batch_size;
        o.shuffle = shuffle;
        o.seed = seed;
        o.drop_last = drop_last;
        o.num_workers = num_workers;
        o.prefetch_factor = prefetch_factor;
        o.num_replicas = num_replicas;
        o.rank = rank;
        return new data::DataLoader(std::move(inputs), std::move(targets), o);
      }), py::arg("inputs"), py::arg("targets"), py::arg("batch_size") = 1, py::arg("shuffle") = false,
          py::arg("seed") = 0, py::arg("drop_last") = false, py::arg("num_workers") = 0,
          py::arg("prefetch_factor") = 2, py::arg("num_replicas") = 1, py::arg("rank") = 0)
      .def("__len__", &data::DataLoader::size)
      .def("indices", &data::DataLoader::indices, py::arg("epoch"))
      // The epoch keeps its loader alive.
      .def("epoch", [](const data::DataLoader& l, int64_t e) { return new EpochIterator(l.epoch(e)); },
           py::keep_alive<0, 1>(), py::arg("epoch"));

  py::class_<data::FashionMNIST>(d, "FashionMNIST")
      .def(py::init([](const std::string& root, bool train) {
        return nogil([&] { return new data::FashionMNIST(root, train); });
      }), py::arg("root") = std::string(data::FashionMNIST::kDefaultRoot), py::arg("train") = true)
      .def_property_readonly("images", &data::FashionMNIST::images)
      .def_property_readonly("labels", &data::FashionMNIST::labels)
      .def("__len__", &data::FashionMNIST::size)
      .def_property_readonly_static("classes", [](py::object) { return data::FashionMNIST::class_names(); });
  d.attr("FASHION_MNIST_ROOT") = data::FashionMNIST::kDefaultRoot;
}

}  // namespace ember::python
