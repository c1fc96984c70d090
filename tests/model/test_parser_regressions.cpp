// Hostile input to the model's parsers (issue 25): every input ends in a one-line InputError that
// names the file and the key, never in nlohmann's or the standard library's own text. The inputs
// are the cases the issue measured and the ones the fuzz targets (fuzz/) found.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "model/calibration.hpp"
#include "model/catalog.hpp"
#include "model/embedded.hpp"
#include "model/errors.hpp"
#include "model/sweep.hpp"
#include "model/text_io.hpp"
#include "model/types.hpp"
#include "tests/support/error_of.hpp"

namespace epochcast {
namespace {

using nlohmann::json;

using testing::input_error_of;

void expect_one_line_naming(const std::string& message, const std::string& file, const std::string& key) {
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find(key), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
}

json prior() { return json::parse(embedded::prior_calibration_json); }
json fitted() { return json::parse(embedded::calibration_json); }

TEST(CalibrationParser, AStringWhereAResidualHoldsANumberNamesTheKey) {
    // Was nlohmann's "type must be number, but is string" (exit 1).
    json c = fitted();
    c["uncertainty"]["residuals"][0]["measured"] = "1396";
    const std::string message = input_error_of([&] { Calibration::parse(c.dump(), "cal.json"); });
    expect_one_line_naming(message, "cal.json", "uncertainty.residuals[0].measured must be a number");
}

TEST(CalibrationParser, AResidualThatIsNotAnObjectNamesItsIndex) {
    json c = fitted();
    c["uncertainty"]["residuals"][3] = 7;
    expect_one_line_naming(input_error_of([&] { Calibration::parse(c.dump(), "cal.json"); }), "cal.json",
                           "uncertainty.residuals[3] must be an object");
}

TEST(CalibrationParser, AStringWhereACurveHoldsANumberNamesTheKey) {
    json c = prior();
    c["compute"] = json::array({{{"gpu", "V100"},
                                 {"precision", "amp"},
                                 {"framework", "mxnet"},
                                 {"time_per_image_s", "fast"},
                                 {"fixed_s", 0},
                                 {"relative_sigma", 0.1}}});
    expect_one_line_naming(input_error_of([&] { Calibration::parse(c.dump(), "cal.json"); }), "cal.json",
                           "compute[0].time_per_image_s must be a number");
}

TEST(CalibrationParser, ACovarianceOf1e308IsRefused) {
    // Such a calibration printed the band as "0 - -0".
    json c = fitted();
    c["uncertainty"]["covariance"][0][0] = 1e308;
    const std::string message = input_error_of([&] { Calibration::parse(c.dump(), "cal.json"); });
    expect_one_line_naming(message, "cal.json", "uncertainty.covariance has a variance of 1e+308 in row 0");
}

TEST(CalibrationParser, ACovarianceBeyondItsVariancesIsRefused) {
    json c = fitted();
    c["uncertainty"]["covariance"][1][0] = 1e308;
    c["uncertainty"]["covariance"][0][1] = 1e308;
    expect_one_line_naming(input_error_of([&] { Calibration::parse(c.dump(), "cal.json"); }), "cal.json",
                           "row 1 column 0 exceeds what the two variances allow");
    c["uncertainty"]["covariance"][1][0] = 0.0;
    expect_one_line_naming(input_error_of([&] { Calibration::parse(c.dump(), "cal.json"); }), "cal.json",
                           "is not symmetric (rows 0 and 1)");
}

TEST(CalibrationParser, TheBuiltInCalibrationsStillParse) {
    EXPECT_EQ(input_error_of([] { Calibration::built_in(); }), "");
    EXPECT_EQ(input_error_of([] { Calibration::data_free_prior(); }), "");
}

TEST(JsonParsers, ANumberBeyondADoubleIsAOneLineErrorInEveryFile) {
    // Was "[json.exception.out_of_range.406] number overflow parsing '1e400'".
    const Catalog catalog = Catalog::built_in();
    expect_one_line_naming(
        input_error_of([] { Catalog::parse(R"({"schema": "epochcast.catalog/1", "x": 1e400})", "cat.json"); }),
        "cat.json", "beyond the range of a double");
    expect_one_line_naming(input_error_of([] { Calibration::parse(R"({"schema": 1e400})", "cal.json"); }), "cal.json",
                           "beyond the range of a double");
    expect_one_line_naming(input_error_of([&] { parse_sweep_spec(R"({"epochs": [1e400]})", "spec.json", catalog); }),
                           "spec.json", "beyond the range of a double");
}

TEST(JsonParsers, MalformedJsonSaysWhereWithoutNlohmannsTag) {
    // Was "spec.json: malformed JSON at byte 1: [json.exception.parse_error.101] parse error at ...".
    const std::string message = input_error_of([] { Catalog::parse("", "cat.json"); });
    EXPECT_EQ(message,
              "cat.json: malformed JSON at line 1, column 1 (byte 1): syntax error while parsing value - "
              "unexpected end of input; expected '[', '{', or a literal");
    const std::string control = input_error_of([] { Catalog::parse("{\"a\": tr\x01", "cat.json"); });
    expect_one_line_naming(control, "cat.json: malformed JSON at line 1, column ", "invalid literal");
    EXPECT_EQ(control.find('\x01'), std::string::npos) << control;  // nlohmann writes it <U+0001>
}

TEST(SweepSpecParser, ACountBeyondAnIntIsRefusedNotWrapped) {
    // 4294967297 nodes became 1 node (the int kept the low 32 bits).
    const Catalog catalog = Catalog::built_in();
    const std::string message =
        input_error_of([&] { parse_sweep_spec(R"({"nodes": [2, 4294967297]})", "spec.json", catalog); });
    expect_one_line_naming(message, "spec.json", "\"nodes\" value 4294967297 must be at most 2147483647");
    expect_one_line_naming(
        input_error_of([&] { parse_sweep_spec(R"({"batch_per_gpu": 18446744073709551615})", "spec.json", catalog); }),
        "spec.json", "\"batch_per_gpu\" value 18446744073709551615 must be at most 2147483647");
}

TEST(SweepSpecParser, APsRatioWhoseServersOverflowAnIntIsRefused) {
    // ceil(1e300 x 8) server nodes was an undefined conversion to int (UBSan: float-cast-overflow).
    const Catalog catalog = Catalog::built_in();
    const std::string message = input_error_of([&] {
        parse_sweep_spec(R"({"nodes": 8, "strategy": "ps", "ps_instance": "m4.16xlarge", "ps_ratio": 1e300})",
                         "spec.json", catalog);
    });
    expect_one_line_naming(message, "spec.json", "\"ps_ratio\" value 1e+300 times 8 nodes");
}

TEST(SweepSpecParser, AnUnknownKeyIsEchoedEscaped) {
    const Catalog catalog = Catalog::built_in();
    const std::string message =
        input_error_of([&] { parse_sweep_spec("{\"no\\nde\\u0007s\": 1}", "spec.json", catalog); });
    expect_one_line_naming(message, "spec.json", "unknown key \"no\\nde\\x07s\"");
}

TEST(CatalogParser, ANameWithANewlineIsRefused) {
    const std::string text = R"({"schema": "epochcast.catalog/1", "gpus": [{"name": "V\n100", "fp32_tflops": 1,
        "fp16_tflops": 1, "memory_gib": 1, "memory_GBps": 1, "source": "s"}]})";
    const std::string message = input_error_of([&] { Catalog::parse(text, "cat.json"); });
    expect_one_line_naming(message, "cat.json", "gpus[0] \"V\\n100\": key \"name\" must not hold control characters");
}

TEST(CatalogParser, AnUnknownNameIsEchoedEscaped) {
    const std::string message = input_error_of([] { Catalog::built_in().instance("p3\n\xff"); });
    EXPECT_NE(message.find("unknown instance 'p3\\n\\xff'"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(EnumParser, AnUnknownValueIsEchoedEscaped) {
    const std::string message = input_error_of([] { parse_precision("fp\r16", "--precision"); });
    EXPECT_NE(message.find("--precision: unknown value 'fp\\r16'"), std::string::npos) << message;
}

TEST(EscapeForMessage, KeepsUtf8AndEscapesControlsAndBadBytes) {
    EXPECT_EQ(escape_for_message("p3.16xlarge"), "p3.16xlarge");
    EXPECT_EQ(escape_for_message("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");  // é and €, kept
    EXPECT_EQ(escape_for_message("a\nb\tc\rd"), "a\\nb\\tc\\rd");
    EXPECT_EQ(escape_for_message(std::string("x\0y", 3)), "x\\x00y");
    EXPECT_EQ(escape_for_message("\xff\xc3"), "\\xff\\xc3");           // not UTF-8; a cut sequence
    EXPECT_EQ(escape_for_message("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate is not UTF-8
    EXPECT_EQ(escape_for_message("\xc0\xaf"), "\\xc0\\xaf");           // nor an overlong '/'
}

// Issue 59, item 15: text that reads otherwise than it is, or runs for pages, is not echoed as is.
// A right-to-left override (U+202E) made "p5\u202e.48xlarge" print reversed, a byte-order mark and
// a zero-width space hide in a name, a C1 control (U+0085) breaks a line; a 100,000-character name
// filled the terminal. Each becomes \uXXXX, and past 256 bytes the text is cut, its length said.
TEST(EscapeForMessage, InvisibleFormatCharactersAreShownAndLongTextIsCut) {
    EXPECT_EQ(escape_for_message("p5\xe2\x80\xae.48xlarge"), "p5\\u202e.48xlarge");
    EXPECT_EQ(escape_for_message("\xef\xbb\xbfnode1"), "\\ufeffnode1");
    EXPECT_EQ(escape_for_message("a\xe2\x80\x8b"
                                 "b"),
              "a\\u200bb");
    EXPECT_EQ(escape_for_message("a\xc2\x85"
                                 "b"),
              "a\\u0085b");
    EXPECT_EQ(escape_for_message("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");  // an isolate and its end
    EXPECT_EQ(escape_for_message("\xd7\x90"), "\xd7\x90");                          // a Hebrew letter is text: kept
    const std::string long_name(100'000, 'a');
    EXPECT_EQ(escape_for_message(long_name), std::string(kMessageTextMaxBytes, 'a') + "... (100,000 bytes in all)");
    // Cut before a character, never inside one: 255 ASCII bytes, then a two-byte e-acute across the cut.
    const std::string across = std::string(255, 'a') + "\xc3\xa9" + "tail";
    EXPECT_EQ(escape_for_message(across), std::string(255, 'a') + "... (261 bytes in all)");
}

// Issue 59, items 1, 10 and 11: the one JSON reader bounds the nesting before it parses (a
// checkpoint header a million levels deep overflowed the parser's stack), refuses a key given twice
// in one object (a catalog's price given twice took the last, $1,000,000/h), and a NUL byte (the
// parser took it for the end, dropping an elastic schedule's node losses after it).
TEST(JsonReader, DeepNestingDuplicateKeysAndNulAreRefusedByName) {
    const std::string deep(1000000, '[');
    expect_one_line_naming(input_error_of([&] { parse_json(deep, "deep.json"); }), "deep.json",
                           "nested more than 256 levels deep");
    std::string within;
    for (std::size_t i = 0; i < kMaxJsonDepth; ++i) within += '[';
    for (std::size_t i = 0; i < kMaxJsonDepth; ++i) within += ']';
    EXPECT_NO_THROW(parse_json(within, "ok.json"));
    // Brackets inside strings are text, not nesting.
    EXPECT_NO_THROW(parse_json("{\"a\": \"" + deep.substr(0, 5000) + "\\\"[\"}", "strings.json"));

    expect_one_line_naming(input_error_of([] { parse_json(R"({"a": 1, "b": {"c": 2, "c": 3}})", "dup.json"); }),
                           "dup.json", "the key \"c\" is given twice");
    EXPECT_NO_THROW(parse_json(R"({"c": 1, "b": {"c": 2}, "d": [{"c": 3}, {"c": 4}]})", "same-name.json"));
    const std::string catalog = R"({"schema": "epochcast.catalog/1", "instances": [{"name": "p3.16xlarge",
        "price_usd_per_hour": 1, "price_usd_per_hour": 1000000}]})";
    expect_one_line_naming(input_error_of([&] { Catalog::parse(catalog, "prices.json", Catalog::built_in()); }),
                           "prices.json", "price_usd_per_hour");

    const std::string nul = std::string(R"({"a": 1})") + '\0' + R"(, "node_losses": [1])";
    expect_one_line_naming(input_error_of([&] { parse_json(nul, "nul.json"); }), "nul.json", "a NUL byte at byte 8");
    EXPECT_TRUE(parse_json_or_discarded(nul).is_discarded());
    EXPECT_TRUE(parse_json_or_discarded(deep).is_discarded());
    EXPECT_EQ(parse_json_or_discarded(R"({"a": 1})")["a"], 1);
}

// Issue 59, item 5: a FIFO blocked every file input until a writer came, and a device was read as
// far as the size cap. Only regular files are read, refused before they are opened.
TEST(JsonReader, AFifoADeviceAndAFolderAreRefusedBeforeTheyAreOpened) {
    const std::filesystem::path folder =
        std::filesystem::temp_directory_path() / ("epochcast-fifo-" + std::to_string(::getpid()));
    std::filesystem::create_directories(folder);
    const std::filesystem::path fifo = folder / "spec.json";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    expect_one_line_naming(input_error_of([&] { read_text_file(fifo, "spec"); }), fifo.string(),
                           "not a regular file (a FIFO, a device or a socket)");
    expect_one_line_naming(input_error_of([] { read_text_file("/dev/zero", "catalog"); }), "/dev/zero",
                           "not a regular file");
    expect_one_line_naming(input_error_of([&] { read_text_file(folder, "trace"); }), folder.string(), "directory");
    std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace epochcast
