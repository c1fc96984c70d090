// GPU tests skip cleanly when no GPU is visible (no driver, no device): REQUIRE_GPU() first thing in
// a test or a fixture's SetUp. Include only where EPOCHCAST_WITH_CUDA is defined.
#pragma once

#include <gtest/gtest.h>

#include "executor/cuda/check.hpp"

#define REQUIRE_GPU() \
    if (::epochcast::cuda::visible_gpus() == 0) GTEST_SKIP() << "no GPU visible (cudaGetDeviceCount)"
