// A file with given text under the temporary directory, with a unique name, removed when the
// test ends. Shared by every test folder.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <system_error>

namespace epochcast::testing {

class TempFile {
public:
    explicit TempFile(const std::string& text, const std::string& suffix = ".json") {
        static std::atomic<int> counter{0};
        std::random_device random;
        path_ = std::filesystem::temp_directory_path() /
                ("epochcast_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
                 std::to_string(random()) + suffix);
        std::ofstream(path_) << text;
    }
    ~TempFile() {
        std::error_code ignored;
        std::filesystem::remove(path_, ignored);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    std::string path() const { return path_.string(); }

private:
    std::filesystem::path path_;
};

}  // namespace epochcast::testing
