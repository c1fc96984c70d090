#include "executor/checkpoint.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "model/errors.hpp"
#include "model/text_io.hpp"

namespace epochcast {

namespace {

constexpr std::size_t kChecksumBytes = 8;

void append_floats(std::string& out, const std::vector<float>& values) {
    if (values.empty()) return;
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

void append_checksum(std::string& out) {
    std::uint64_t hash = fnv1a64(out);
    for (std::size_t i = 0; i < kChecksumBytes; ++i, hash >>= 8) out.push_back(static_cast<char>(hash & 0xff));
}

std::uint64_t stored_checksum(const std::string& bytes) {
    std::uint64_t hash = 0;
    for (std::size_t i = 0; i < kChecksumBytes; ++i) {
        hash |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[bytes.size() - kChecksumBytes + i]))
                << (8 * i);
    }
    return hash;
}

/// A whole number of the header (a step or a count), refused unless it is one: a value such as 7.1e26
/// or 1e19 is not converted (the conversion of a float out of range is undefined).
std::int64_t header_integer(const nlohmann::json& value, const std::filesystem::path& file, const char* key) {
    const std::optional<std::int64_t> n = json_whole_number(value);
    if (!n) {
        throw InputError("checkpoint '" + file.string() + "' has a malformed " + key + " (" +
                         value.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
                         "; a whole number expected)");
    }
    return *n;
}

/// A tensor's element count from the header: an integer from 0 to what the file could hold. Past
/// that, a file whose checksum holds (`intact`: written so, or re-signed) has a header that does
/// not describe it; any other is truncated.
std::int64_t element_count(const nlohmann::json& value, std::size_t file_bytes, const std::filesystem::path& file,
                           bool intact) {
    const auto count = header_integer(value, file, "element count");
    if (count < 0) {
        throw InputError("checkpoint '" + file.string() + "' has a malformed element count (" + std::to_string(count) +
                         "; a whole number from 0 expected)");
    }
    if (static_cast<std::uint64_t>(count) > file_bytes / sizeof(float)) {
        throw InputError("checkpoint '" + file.string() + "' " +
                         (intact ? "does not match its header" : "is truncated") + " (its header announces " +
                         std::to_string(count) + " values" +
                         (intact ? ", more than its " + std::to_string(file_bytes) + " bytes hold)" : ")"));
    }
    return count;
}

/// The header's "state": a list of {"name": text, "elements": count}; anything else is named.
const nlohmann::json& state_list(const nlohmann::json& header, const std::filesystem::path& file) {
    const nlohmann::json& state = header.at("state");
    const auto malformed = [&](const nlohmann::json& what) {
        return InputError("checkpoint '" + file.string() + "' has a malformed state (" +
                          escape_for_message(what.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace)) +
                          "; a list of {\"name\", \"elements\"} expected)");
    };
    if (!state.is_array()) throw malformed(state);
    for (const nlohmann::json& entry : state) {
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("elements"))
            throw malformed(entry);
    }
    return state;
}

/// Reads `count` floats at `offset` of `payload` (whose size the caller has checked).
std::vector<float> take_floats(const std::string& payload, std::size_t& offset, std::int64_t count,
                               const std::filesystem::path& file, const std::string& what) {
    std::vector<float> values(static_cast<std::size_t>(count));
    if (!values.empty()) std::memcpy(values.data(), payload.data() + offset, values.size() * sizeof(float));
    offset += values.size() * sizeof(float);
    for (const float value : values) {
        if (!std::isfinite(value)) {
            throw InputError("checkpoint '" + file.string() + "' holds a non-finite value in its " + what +
                             "; it cannot be resumed");
        }
    }
    return values;
}

/// The PID of a temporary "checkpoint.ecp.tmp.<PID>[...]", or 0 when the name is not one.
pid_t temporary_owner(const std::string& name) {
    const std::string prefix = std::string(kCheckpointFile) + ".tmp.";
    if (name.rfind(prefix, 0) != 0) return 0;
    long long pid = 0;
    std::size_t i = prefix.size();
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && pid < (1LL << 31); ++i)
        pid = pid * 10 + (name[i] - '0');
    return i > prefix.size() && pid > 0 && pid < (1LL << 31) ? static_cast<pid_t>(pid) : 0;
}

bool process_is_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

/// Removes the temporaries of writers that are gone (killed mid-write); keeps this process's and
/// those of live processes (another run writing into the same folder right now).
void remove_stale_temporaries(const std::filesystem::path& directory) {
    std::error_code error;
    for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
        const pid_t owner = temporary_owner(it->path().filename().string());
        if (owner == 0 || owner == ::getpid() || process_is_alive(owner)) continue;
        std::error_code ignored;
        std::filesystem::remove(it->path(), ignored);
    }
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash) {
    constexpr std::uint64_t kPrime = 1099511628211ULL;
    for (const char c : bytes) {
        hash ^= static_cast<unsigned char>(c);
        hash *= kPrime;
    }
    return hash;
}

void write_checkpoint(const std::filesystem::path& directory, const Checkpoint& checkpoint) {
    std::error_code error;
    std::filesystem::create_directories(directory, error);
    if (error) {
        throw InputError("cannot create checkpoint folder '" + directory.string() + "': " + error.message());
    }
    remove_stale_temporaries(directory);
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
    append_checksum(payload);
    write_text_file_atomically(directory / kCheckpointFile, payload, "checkpoint");
}

Checkpoint read_checkpoint(const std::filesystem::path& directory) {
    const std::filesystem::path file = directory / kCheckpointFile;
    // Regular files only: a FIFO would block the open, /dev/zero never end (issue 59, item 5).
    std::error_code error;
    if (std::filesystem::exists(file, error) && !std::filesystem::is_regular_file(file, error)) {
        throw InputError("no checkpoint to resume from: '" + file.string() +
                         "' is not a regular file (a folder, a FIFO or a device)");
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw InputError("no checkpoint to resume from: cannot read '" + file.string() + "'");
    }
    const std::string payload((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t end_of_header = payload.find('\n');
    nlohmann::json header;
    try {
        // The one JSON reader: a header nested past its depth, with a NUL or a key given twice is refused
        // (a re-signed header a million levels deep overflowed the parser's stack: issue 59).
        header = parse_json(std::string_view(payload).substr(0, end_of_header), "its header");
    } catch (const InputError& error) {
        throw InputError("'" + file.string() + "' is not an epochcast checkpoint, or its header is damaged (" +
                         error.what() + ")");
    }
    const std::string schema = header.is_object() && header.contains("schema") && header["schema"].is_string()
                                   ? header["schema"].get<std::string>()
                                   : "";
    if (end_of_header != std::string::npos && schema == kUncheckedCheckpointSchema) {
        throw InputError("'" + file.string() + "' is an " + schema +
                         " checkpoint, written before checkpoints carried a checksum; it cannot be verified, so it "
                         "is not resumed: start the run again (or resume it with the epochcast that wrote it)");
    }
    if (end_of_header == std::string::npos || schema != kCheckpointSchema) {
        throw InputError("'" + file.string() + "' is not an epochcast checkpoint (schema " +
                         std::string(kCheckpointSchema) + " expected)");
    }
    Checkpoint checkpoint;
    try {
        checkpoint.run = header.at("run");
        checkpoint.next_step = header_integer(header.at("next_step"), file, "next_step");
        if (checkpoint.next_step < 0) throw InputError("checkpoint '" + file.string() + "' has a negative next_step");
        // Whether the checksum holds decides what a size that disagrees means: a file changed or cut
        // after it was written, or (the checksum holding) a header that does not describe its file.
        const bool intact =
            payload.size() >= end_of_header + 1 + kChecksumBytes &&
            fnv1a64(std::string_view(payload).substr(0, payload.size() - kChecksumBytes)) == stored_checksum(payload);
        // The sizes the header announces, against the file's, before anything is read.
        const std::int64_t parameters = element_count(header.at("parameters"), payload.size(), file, intact);
        std::uint64_t values = 2 * static_cast<std::uint64_t>(parameters);
        std::vector<std::int64_t> state_elements;
        const nlohmann::json& state = state_list(header, file);
        for (const nlohmann::json& entry : state) {
            state_elements.push_back(element_count(entry.at("elements"), payload.size(), file, intact));
            values += static_cast<std::uint64_t>(state_elements.back());
        }
        const std::uint64_t expected = end_of_header + 1 + values * sizeof(float) + kChecksumBytes;
        if (payload.size() != expected && intact) {
            throw InputError("checkpoint '" + file.string() + "' does not match its header: it announces " +
                             std::to_string(values) + " values (" + std::to_string(expected) +
                             " bytes with the header and checksum), the file holds " + std::to_string(payload.size()) +
                             " bytes");
        }
        if (payload.size() < expected) throw InputError("checkpoint '" + file.string() + "' is truncated");
        if (payload.size() > expected) throw InputError("checkpoint '" + file.string() + "' has trailing bytes");
        if (!intact) {
            throw InputError("checkpoint '" + file.string() +
                             "' is damaged: its checksum does not match its contents (changed or truncated after "
                             "it was written); it cannot be resumed");
        }
        std::size_t offset = end_of_header + 1;
        checkpoint.weights = take_floats(payload, offset, parameters, file, "weights");
        checkpoint.momentum = take_floats(payload, offset, parameters, file, "momentum");
        std::size_t index = 0;
        for (const nlohmann::json& entry : state) {
            NamedTensor tensor{entry.at("name").get<std::string>(), {}};
            tensor.values = take_floats(payload, offset, state_elements[index++], file, "state '" + tensor.name + "'");
            checkpoint.state.push_back(std::move(tensor));
        }
    } catch (const nlohmann::json::exception&) {
        throw InputError("checkpoint '" + file.string() +
                         "' has a malformed header (run, next_step, parameters and state[].name/elements expected)");
    }
    return checkpoint;
}

void check_resumable(const nlohmann::json& saved_run, const nlohmann::json& this_run,
                     const std::filesystem::path& directory) {
    for (const auto& [key, value] : this_run.items()) {
        const nlohmann::json saved = saved_run.contains(key) ? saved_run.at(key) : nlohmann::json();
        if (saved != value) {
            throw InputError("cannot resume from '" + directory.string() + "': the checkpoint was written for " + key +
                             " " + saved.dump() + ", this run has " + value.dump());
        }
    }
}

}  // namespace epochcast
