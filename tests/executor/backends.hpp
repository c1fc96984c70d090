// The backends the conformance suites (test_layer_conformance.cpp, test_network_conformance.cpp)
// run over: the CPU backend always; the CUDA backend's instances are always listed but skip, with
// the reason, when this build has no CUDA backend or no GPU is visible, so that a missing GPU shows
// in the test report as skips, never as failures.
#pragma once

#include <gtest/gtest.h>

#include <string>

#ifdef EPOCHCAST_WITH_CUDA
#include "executor/cuda/check.hpp"
#endif

namespace epochcast::testing {

enum class Backend { cpu, cuda };

inline const char* backend_name(Backend backend) { return backend == Backend::cpu ? "cpu" : "cuda"; }

/// Why `backend` cannot run here, or "" when it can.
inline std::string skip_reason(Backend backend) {
    if (backend == Backend::cpu) return "";
#ifdef EPOCHCAST_WITH_CUDA
    if (::epochcast::cuda::visible_gpus() == 0) return "no GPU visible (cudaGetDeviceCount)";
    return "";
#else
    return "this build has no CUDA backend (EPOCHCAST_WITH_CUDA is off)";
#endif
}

}  // namespace epochcast::testing

/// First thing in a test or a fixture's SetUp: skips, saying why, when `backend` cannot run here.
#define REQUIRE_BACKEND(backend)                                                                                  \
    if (const std::string epochcast_skip_ = ::epochcast::testing::skip_reason(backend); !epochcast_skip_.empty()) \
    GTEST_SKIP() << epochcast_skip_
