// What every dataset shares: the position rule (batch_position), Batch filling, and the argument
// checks of data.hpp's contract. The datasets are synthetic_data.cpp and image_folder.cpp; the
// prefetching loader is loader.cpp.
#include "executor/data.hpp"

#include <string>

#include "model/errors.hpp"

namespace epochcast {

void check_fill_arguments(std::int64_t position, int count) {
    if (position < 0) throw InputError("data position must be >= 0, got " + std::to_string(position));
    if (count < 0) throw InputError("data batch count must be >= 0, got " + std::to_string(count));
}

void check_image_size(int image_size) {
    if (image_size < 1) throw InputError("image size must be >= 1 pixel, got " + std::to_string(image_size));
}

std::size_t image_values(int image_size) { return std::size_t{3} * image_size * image_size; }

void DataSource::fill(std::int64_t position, int count, Batch& batch) const {
    check_fill_arguments(position, count);
    batch.size = count;
    batch.image_size = image_size();
    batch.images.resize(static_cast<std::size_t>(count) * image_values(image_size()));
    batch.labels.resize(static_cast<std::size_t>(count));
    fill_into(position, count, batch.images.data(), batch.labels.data());
}

std::int64_t batch_position(std::int64_t step, int worker, int workers, int batch) {
    return step * static_cast<std::int64_t>(workers) * batch + static_cast<std::int64_t>(worker) * batch;
}

}  // namespace epochcast
