#include "executor/loader.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/errors.hpp"

namespace epochcast {

// BatchLoader. depth + 1 slots: `depth` being filled ahead while the caller holds one. Step k
// lives in slot (k - first_step) % (depth + 1). Each step is cut into chunks of at most
// kMaxChunkImages images so that several threads share one batch and a stopping loader waits
// for at most one chunk per thread; each chunk is decoded straight into its place in the slot's
// images. Tasks run in step order, so the batch needed next is finished first.

namespace {
constexpr int kMaxChunkImages = 8;

/// The memory of plain slots.
class PlainMemory final : public HostMemory {
public:
    void* allocate(std::size_t bytes) override { return ::operator new(bytes); }
    void release(void* data) noexcept override { ::operator delete(data); }
};
}  // namespace

struct BatchLoader::Impl {
    /// One batch's images in `memory`, labels beside them.
    struct Slot {
        HostMemory* memory = nullptr;
        float* images = nullptr;  ///< batch x 3 x S x S, from memory
        std::vector<std::int32_t> labels;
        BatchView view;
        std::int64_t step = -1;
        int chunks_left = 0;
        bool ready = false;
        std::exception_ptr error;

        Slot() = default;
        Slot(const Slot&) = delete;
        Slot& operator=(const Slot&) = delete;
        ~Slot() {
            if (images != nullptr) memory->release(images);
        }
    };
    struct Task {
        int slot;
        int begin, count;  ///< images within the batch
    };

    Impl(const DataSource& source_, int batch_, int worker_, int workers_)
        : source(source_), batch(batch_), worker(worker_), workers(workers_) {}

    const DataSource& source;
    int batch, worker, workers;
    int chunk_images = 1;
    PlainMemory plain;
    std::vector<std::unique_ptr<Slot>> slots;
    std::int64_t first_step;
    std::int64_t next_to_schedule;  ///< step the next free slot gets
    std::int64_t next_to_return;    ///< step next() hands out
    std::exception_ptr failed;      ///< once next() has thrown, it throws this again
    double wait_seconds = 0;

    std::mutex mutex;
    std::condition_variable work_ready, batch_ready;
    std::deque<Task> tasks;
    bool stopping = false;
    std::vector<std::thread> threads;

    std::int64_t position_of(std::int64_t step) const { return batch_position(step, worker, workers, batch); }
    int slot_of(std::int64_t step) const { return static_cast<int>((step - first_step) % std::ssize(slots)); }

    /// A slot of `batch` images in `memory`.
    void add_slot(HostMemory& memory) {
        auto slot = std::make_unique<Slot>();
        const std::size_t values = static_cast<std::size_t>(batch) * image_values(source.image_size());
        slot->memory = &memory;
        slot->images = static_cast<float*>(memory.allocate(values * sizeof(float)));
        slot->labels.resize(static_cast<std::size_t>(batch));
        slot->view = BatchView{batch, source.image_size(), {slot->images, values}, slot->labels};
        slots.push_back(std::move(slot));
    }

    /// Queue the next step into its (free) slot. Called with `mutex` held.
    void schedule() {
        const std::int64_t step = next_to_schedule++;
        Slot& slot = *slots[slot_of(step)];
        slot.step = step;
        slot.ready = false;
        slot.error = nullptr;
        slot.chunks_left = (batch + chunk_images - 1) / chunk_images;
        for (int begin = 0; begin < batch; begin += chunk_images)
            tasks.push_back({slot_of(step), begin, std::min(chunk_images, batch - begin)});
        work_ready.notify_all();
    }

    void run() {
        const std::size_t values = image_values(source.image_size());
        for (;;) {
            Task task;
            std::int64_t step;
            {
                std::unique_lock lock(mutex);
                work_ready.wait(lock, [&] { return stopping || !tasks.empty(); });
                if (stopping) return;
                task = tasks.front();
                tasks.pop_front();
                step = slots[task.slot]->step;
            }
            Slot& slot = *slots[task.slot];
            std::exception_ptr error;
            try {
                source.fill_into(position_of(step) + task.begin, task.count, slot.images + task.begin * values,
                                 slot.labels.data() + task.begin);
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard lock(mutex);
            if (error && !slot.error) slot.error = error;
            if (--slot.chunks_left == 0) {
                slot.ready = true;
                batch_ready.notify_all();
            }
        }
    }
};

BatchLoader::BatchLoader(const DataSource& source, int batch, int worker, int workers, std::int64_t first_step,
                         int threads, int depth, HostMemory* memory)
    : impl_(std::make_unique<Impl>(source, batch, worker, workers)) {
    if (batch < 1) throw InputError("batch loader: batch must be >= 1, got " + std::to_string(batch));
    if (workers < 1 || worker < 0 || worker >= workers)
        throw InputError("batch loader: worker " + std::to_string(worker) + " of " + std::to_string(workers) +
                         " is out of range");
    if (first_step < 0) throw InputError("batch loader: first step must be >= 0, got " + std::to_string(first_step));
    if (threads < 1) throw InputError("batch loader: threads must be >= 1, got " + std::to_string(threads));
    if (depth < 1) throw InputError("batch loader: depth must be >= 1, got " + std::to_string(depth));
    Impl& impl = *impl_;
    impl.chunk_images = std::clamp((batch + threads - 1) / threads, 1, kMaxChunkImages);
    for (int i = 0; i <= depth; ++i) impl.add_slot(memory != nullptr ? *memory : impl.plain);
    impl.first_step = impl.next_to_schedule = impl.next_to_return = first_step;
    {
        std::lock_guard lock(impl.mutex);
        for (int i = 0; i < depth; ++i) impl.schedule();
    }
    impl.threads.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) impl.threads.emplace_back([&impl] { impl.run(); });
}

BatchLoader::~BatchLoader() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopping = true;
        impl_->tasks.clear();
    }
    impl_->work_ready.notify_all();
    for (std::thread& thread : impl_->threads) thread.join();
}

const BatchView& BatchLoader::next() {
    Impl& impl = *impl_;
    if (impl.failed) std::rethrow_exception(impl.failed);
    std::unique_lock lock(impl.mutex);
    // The slot the caller held (or, on the first call, the spare one) is free again: fill it
    // with the step `depth` ahead, then wait for this one.
    while (impl.next_to_schedule < impl.next_to_return + std::ssize(impl.slots)) impl.schedule();
    Impl::Slot& slot = *impl.slots[impl.slot_of(impl.next_to_return)];
    if (!slot.ready) {
        const auto start = std::chrono::steady_clock::now();
        impl.batch_ready.wait(lock, [&] { return slot.ready; });
        impl.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    ++impl.next_to_return;
    if (slot.error) {
        impl.failed = slot.error;
        std::rethrow_exception(impl.failed);
    }
    return slot.view;
}

double BatchLoader::wait_s() const { return impl_->wait_seconds; }

}  // namespace epochcast
