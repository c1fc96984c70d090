#include "executor/checkpoint.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {

namespace {

void append_floats(std::string& out, const std::vector<float>& values) {
    const auto* bytes = reinterpret_cast<const char*>(values.data());
    out.append(bytes, values.size() * sizeof(float));
}

/// Reads `count` floats at `offset` of `payload`; throws when the file is too short.
std::vector<float> take_floats(const std::string& payload, std::size_t& offset, std::int64_t count,
                               const std::filesystem::path& file) {
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
    if (count < 0 || offset + bytes > payload.size()) {
        throw InputError("checkpoint '" + file.string() + "' is truncated");
    }
    std::vector<float> values(static_cast<std::size_t>(count));
    std::memcpy(values.data(), payload.data() + offset, bytes);
    offset += bytes;
    return values;
}

}  // namespace

void write_checkpoint(const std::filesystem::path& directory, const Checkpoint& checkpoint) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) {
        throw InputError("cannot create checkpoint folder '" + directory.string() + "': " + error.message());
    }
    nlohmann::json header = {{"schema", kCheckpointSchema},
                             {"run", checkpoint.run},
                             {"next_step", checkpoint.next_step},
                             {"parameters", checkpoint.weights.size()},
                             {"state", nlohmann::json::array()}};
    for (const NamedTensor& tensor : checkpoint.state) {
        header["state"].push_back({{"name", tensor.name}, {"elements", tensor.values.size()}});
    }
    std::string payload = header.dump() + "\n";
    append_floats(payload, checkpoint.weights);
    append_floats(payload, checkpoint.momentum);
    for (const NamedTensor& tensor : checkpoint.state) {
        append_floats(payload, tensor.values);
    }
    write_text_file_atomically(directory / kCheckpointFile, payload, "checkpoint");
}

Checkpoint read_checkpoint(const std::filesystem::path& directory) {
    const std::filesystem::path file = directory / kCheckpointFile;
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw InputError("no checkpoint to resume from: cannot read '" + file.string() + "'");
    }
    const std::string payload((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t end_of_header = payload.find('\n');
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(payload.substr(0, end_of_header));
    } catch (const nlohmann::json::exception&) {
        throw InputError("'" + file.string() + "' is not an epochcast checkpoint (bad header)");
    }
    if (end_of_header == std::string::npos || !header.is_object() || header.value("schema", "") != kCheckpointSchema) {
        throw InputError("'" + file.string() + "' is not an epochcast checkpoint (schema " +
                         std::string(kCheckpointSchema) + " expected)");
    }
    Checkpoint checkpoint;
    try {
        checkpoint.run = header.at("run");
        checkpoint.next_step = header.at("next_step").get<std::int64_t>();
        const auto parameters = header.at("parameters").get<std::int64_t>();
        std::size_t offset = end_of_header + 1;
        checkpoint.weights = take_floats(payload, offset, parameters, file);
        checkpoint.momentum = take_floats(payload, offset, parameters, file);
        for (const nlohmann::json& entry : header.at("state")) {
            NamedTensor tensor{entry.at("name").get<std::string>(), {}};
            tensor.values = take_floats(payload, offset, entry.at("elements").get<std::int64_t>(), file);
            checkpoint.state.push_back(std::move(tensor));
        }
        if (offset != payload.size()) {
            throw InputError("checkpoint '" + file.string() + "' has trailing bytes");
        }
    } catch (const nlohmann::json::exception& error) {
        throw InputError("checkpoint '" + file.string() + "' has a malformed header: " + error.what());
    }
    return checkpoint;
}

void check_resumable(const nlohmann::json& saved_run, const nlohmann::json& this_run,
                     const std::filesystem::path& directory) {
    for (const auto& [key, value] : this_run.items()) {
        const nlohmann::json saved = saved_run.contains(key) ? saved_run.at(key) : nlohmann::json();
        if (saved != value) {
            throw InputError("cannot resume from '" + directory.string() + "': the checkpoint was written for " +
                             key + " " + saved.dump() + ", this run has " + value.dump());
        }
    }
}

}  // namespace epochcast
