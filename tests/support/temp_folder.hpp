// A scratch folder under the temporary directory, with a unique name, removed with everything in
// it when the test ends. Shared by every test folder.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace epochcast::testing {

struct TempFolder {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() /
        ("epochcast_test_folder_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand()));
    TempFolder() { std::filesystem::create_directories(path); }
    ~TempFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    TempFolder(const TempFolder&) = delete;
    TempFolder& operator=(const TempFolder&) = delete;
    /// The path of `name` inside the folder.
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace epochcast::testing
