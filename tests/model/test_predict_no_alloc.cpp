// predict() is the hot path of sweeps: it must not allocate (issue 2). Counted with a replaced
// global operator new that only counts while the flag is set.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "model/cost_model.hpp"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t size) {
    if (counting.load()) allocations.fetch_add(1);
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
// Not inlined: inlined at a delete of what operator new returned, GCC 12 takes the free() inside
// for a mismatched deallocation (-Wmismatched-new-delete) at -O1.
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace epochcast {

TEST(CostModelHotPath, PredictDoesNotAllocate) {
    const CostModel model(Catalog::built_in(), Calibration::built_in());
    Scenario s;
    s.strategy = Strategy::ps;
    s.ps_instance = "m4.16xlarge";
    s.ps_nodes = 16;
    const ResolvedScenario resolved = model.resolve(s);
    counting = true;
    double sum = 0;
    for (int i = 0; i < 1000; ++i) sum += model.predict(resolved).throughput_images_per_s;
    counting = false;
    EXPECT_GT(sum, 0);
    EXPECT_EQ(allocations.load(), 0);
    // The counter works: a vector allocation is seen.
    counting = true;
    static int* volatile sink = nullptr;
    sink = new int(1);
    counting = false;
    delete sink;
    EXPECT_GE(allocations.load(), 1);
}

}  // namespace epochcast
