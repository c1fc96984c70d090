// Host arrays backed by transparent huge pages. The gradient exchange's bf16 buckets travel
// between ranks on one host by a single copy (Open MPI's shared-memory transport reads the
// sender's pages with process_vm_readv, which pins them page by page): with 4 KiB pages that
// pinning, not the copy, dominates (the exchange's times with and without huge pages:
// docs/performance.md).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <vector>

namespace epochcast {

/// `bytes` of host memory, rounded up to whole 2 MiB pages (so: for large arrays only), aligned to
/// 2 MiB and advised (madvise MADV_HUGEPAGE) to be backed by transparent huge pages. Where the
/// kernel has no transparent huge pages it is ordinary memory. Free with std::free. Throws
/// std::bad_alloc.
void* allocate_huge_page_backed(std::size_t bytes);

/// A std::vector allocator over allocate_huge_page_backed.
template <class T>
struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <class U>
    explicit HugePageAllocator(const HugePageAllocator<U>&) {}
    T* allocate(std::size_t count) { return static_cast<T*>(allocate_huge_page_backed(count * sizeof(T))); }
    void deallocate(T* pointer, std::size_t) { std::free(pointer); }
    friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
};

template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace epochcast
