// ParseJson and DescribeJson (base/json_parse.h): the JSON edge every loader
// of a user's file goes through.
#include "base/json_parse.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace fleetsim {
namespace {

using nlohmann::json;

std::string Nested(int depth, char open = '[', char close = ']') {
  return std::string(static_cast<size_t>(depth), open) + std::string(static_cast<size_t>(depth), close);
}

std::string ParseError(std::string_view text, bool single_line = false) {
  json j;
  JsonParseOptions o;
  o.single_line = single_line;
  const Status s = ParseJson(text, &j, o);
  return s.ok() ? "ok" : s.message();
}

TEST(ParseJson, ParsesADocument) {
  json j;
  ASSERT_TRUE(ParseJson(R"({"a": [1, 2.5, "x"], "b": {"c": null}})", &j).ok());
  EXPECT_EQ(j["a"][1], 2.5);
  EXPECT_TRUE(j["b"]["c"].is_null());
}

TEST(ParseJson, AcceptsNestingUpToTheLimit) {
  json j;
  ASSERT_TRUE(ParseJson(Nested(kMaxJsonDepth), &j).ok());
  EXPECT_TRUE(j.is_array());
}

TEST(ParseJson, RefusesNestingBeyondTheLimitNamingWhere) {
  EXPECT_EQ(ParseError(Nested(kMaxJsonDepth + 1)), "invalid JSON at line 1, column 257: nested deeper than 256 levels");
  // 100,000 levels: refused after one pass, nothing built, no recursion.
  EXPECT_EQ(ParseError("\n  " + Nested(100000)), "invalid JSON at line 2, column 259: nested deeper than 256 levels");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"k\":";
  EXPECT_EQ(ParseError(objects), "invalid JSON at line 1, column 1281: nested deeper than 256 levels");
  EXPECT_EQ(ParseError(objects, /*single_line=*/true), "invalid JSON at column 1281: nested deeper than 256 levels");
}

TEST(ParseJson, HonoursASmallerLimit) {
  json j;
  JsonParseOptions o;
  o.max_depth = 2;
  EXPECT_TRUE(ParseJson("[[1]]", &j, o).ok());
  const Status s = ParseJson("[[[1]]]", &j, o);
  EXPECT_EQ(s.message(), "invalid JSON at line 1, column 3: nested deeper than 2 levels");
}

TEST(ParseJson, BracketsInStringsAreNotNesting) {
  json j;
  const std::string deep_text(100000, '[');
  ASSERT_TRUE(ParseJson("[\"" + deep_text + "\", \"\\\"" + deep_text + "\"]", &j).ok());
  EXPECT_EQ(j[0].get<std::string>().size(), 100000u);
  // An escaped backslash ends before the quote: the brackets after it count.
  EXPECT_EQ(ParseError("[\"\\\\\", " + Nested(300) + "]"),
            "invalid JSON at line 1, column 263: nested deeper than 256 levels");
}

TEST(ParseJson, ASyntaxErrorBeforeTheDeepPartIsReportedFirst) {
  const std::string m = ParseError("[1 2, " + Nested(1000) + "]");
  EXPECT_EQ(m.rfind("invalid JSON at line 1, column 4: syntax error", 0), 0u) << m;
  // Trailing text after a complete document.
  const std::string t = ParseError("{}\n" + Nested(1000));
  EXPECT_EQ(t.rfind("invalid JSON at line 2, column 1: syntax error", 0), 0u) << t;
}

TEST(ParseJson, SyntaxErrorsCarryLineAndColumn) {
  const std::string m = ParseError("{\n  \"a\": ,\n}");
  EXPECT_EQ(m.rfind("invalid JSON at line 2, column 8: syntax error while parsing value - unexpected ','", 0), 0u)
      << m;
  // End of input: one past the last character.
  EXPECT_EQ(ParseError("{\"a\": 1").rfind("invalid JSON at line 1, column 8: ", 0), 0u);
  EXPECT_EQ(ParseError("").rfind("invalid JSON at line 1, column 1: ", 0), 0u);
  EXPECT_EQ(ParseError("{\"a\": 1", /*single_line=*/true).rfind("invalid JSON at column 8: ", 0), 0u);
}

TEST(ParseJson, NumberTooLargeForADoubleIsAnError) {
  EXPECT_EQ(ParseError("[1E400]"), "invalid JSON: number overflow parsing '1E400'");
}

TEST(ParseJson, MessagesStayShortWhateverTheInput) {
  // nlohmann quotes the offending token: a megabyte of it must not become
  // the message.
  for (const std::string& text : {"[\"" + std::string(1 << 20, 'x'), "[1" + std::string(1 << 20, '0') + "e99999]",
                                  "[" + std::string(1 << 20, 'x') + "]"}) {
    const std::string m = ParseError(text);
    EXPECT_LT(m.size(), 300u) << m.substr(0, 300);
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(ParseJson, PythonNonFiniteWordsAreNullOnlyWhenAsked) {
  const std::string text = R"({"a": NaN, "b": [Infinity, -Infinity, -1], "s": "NaN \" Infinity"})";
  json j;
  EXPECT_FALSE(ParseJson(text, &j).ok());  // not JSON
  JsonParseOptions o;
  o.python_non_finite = true;
  ASSERT_TRUE(ParseJson(text, &j, o).ok());
  EXPECT_TRUE(j["a"].is_null());
  EXPECT_EQ(j["b"], json::parse("[null, null, -1]"));
  EXPECT_EQ(j["s"], "NaN \" Infinity");  // strings are left alone
  // Padding keeps later columns where they were for the longer words.
  EXPECT_EQ(ParseJson("[Infinity, -Infinity, x]", &j, o).message().rfind("invalid JSON at line 1, column 23", 0),
            0u);
  o.single_line = true;
  EXPECT_EQ(ParseJson("[-Infinity, x]", &j, o).message().rfind("invalid JSON at column 13", 0), 0u);
}

TEST(DescribeJson, ShortValuesAreTheirCompactDump) {
  for (const char* text : {"1", "-2.5", "true", "null", "\"hi\"", "[1,2]", "{\"a\":[true]}"})
    EXPECT_EQ(DescribeJson(json::parse(text)), text);
}

TEST(DescribeJson, LongValuesAreCut) {
  json big = json::array();
  for (int i = 0; i < 1000000; ++i) big.push_back(i);
  EXPECT_EQ(DescribeJson(big), "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,1...");
  EXPECT_EQ(DescribeJson(json(std::string(1 << 20, 'a')), 10), "\"aaaaaa...");
  EXPECT_EQ(DescribeJson(json::parse("{\"abc\": 1}"), 5), "{\"...");
}

TEST(DescribeJson, DeepValuesDoNotRecurseBeyondWhatIsPrinted) {
  // Built in code, so no parse limit applies: the describer alone must not
  // follow 100,000 levels.
  json deep = 1;
  for (int i = 0; i < 100000; ++i) deep = json::array({std::move(deep)});
  EXPECT_EQ(DescribeJson(deep), std::string(37, '[') + "...");
}

TEST(DescribeJson, InvalidUtf8IsReplacedNotThrown) {
  const std::string cut = "\xc3\xa9\xc3\xa9\xc3\xa9";  // "ééé", then cut mid-character below
  EXPECT_NO_THROW(DescribeJson(json(cut), 4));
  EXPECT_NO_THROW(DescribeJson(json(std::string("\xff\xfe")), 40));
}

}  // namespace
}  // namespace fleetsim
