// Data files compiled into the binary (see model/CMakeLists.txt).
#pragma once

#include <string_view>

namespace epochcast::embedded {
/// The text of model/catalog.json.
extern const std::string_view catalog_json;
/// The text of model/default_calibration.json.
extern const std::string_view calibration_json;
/// The text of model/prior_calibration.json.
extern const std::string_view prior_calibration_json;
/// The text of model/convergence.json.
extern const std::string_view convergence_json;
/// The text of model/storage.json.
extern const std::string_view storage_json;
}  // namespace epochcast::embedded
