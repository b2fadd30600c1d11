// Factory of the cpu_sparse backend object (used by the plugin entry and the tests).
#pragma once

#include <minnow/plugin.hpp>

#include <memory>

namespace minnow {
namespace cpu_sparse {

std::unique_ptr<plugin::Backend> make_backend();

}  // namespace cpu_sparse
}  // namespace minnow
