#include "executor/cpu/huge_pages.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

namespace epochcast {

void* allocate_huge_page_backed(std::size_t bytes) {
    constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
    const std::size_t rounded =
        (std::max<std::size_t>(bytes, 1) + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* memory = std::aligned_alloc(kHugePageBytes, rounded);
    if (memory == nullptr) throw std::bad_alloc();
    // Advice only: without transparent huge pages (or with them off) the memory stays as it is.
    madvise(memory, rounded, MADV_HUGEPAGE);
    return memory;
}

}  // namespace epochcast
