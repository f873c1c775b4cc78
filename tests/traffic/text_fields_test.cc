#include "sim/traffic/text_fields.h"

#include <gtest/gtest.h>

namespace fleetsim {
namespace {

TEST(SplitCsv, CountsAllFieldsAndTrimsSpaces) {
  std::string_view f[3];
  EXPECT_EQ(SplitCsv(" a , b,c", f, 3), 3u);
  EXPECT_EQ(f[0], "a");
  EXPECT_EQ(f[1], "b");
  EXPECT_EQ(f[2], "c");
  EXPECT_EQ(SplitCsv("a,b,c,d,", f, 3), 5u);
  EXPECT_EQ(SplitCsv("", f, 3), 1u);
  EXPECT_EQ(f[0], "");
}

TEST(ParsePositiveInt32, AcceptsOnlyWholePositiveIntegers) {
  int32_t v = 0;
  EXPECT_TRUE(ParsePositiveInt32("4808", &v));
  EXPECT_EQ(v, 4808);
  EXPECT_TRUE(ParsePositiveInt32("2147483647", &v));
  EXPECT_FALSE(ParsePositiveInt32("2147483648", &v));
  EXPECT_FALSE(ParsePositiveInt32("0", &v));
  EXPECT_FALSE(ParsePositiveInt32("-3", &v));
  EXPECT_FALSE(ParsePositiveInt32("12abc", &v));
  EXPECT_FALSE(ParsePositiveInt32("1.5", &v));
  EXPECT_FALSE(ParsePositiveInt32("", &v));
  EXPECT_FALSE(ParsePositiveInt32("99999999999999999999999", &v));
}

TEST(ParseSecondsToTime, ConvertsDecimalsExactly) {
  SimTime t = 0;
  EXPECT_TRUE(ParseSecondsToTime("1.000000001", &t));
  EXPECT_EQ(t, 1'000'000'001);
  EXPECT_TRUE(ParseSecondsToTime("0.1", &t));
  EXPECT_EQ(t, 100'000'000);
  EXPECT_TRUE(ParseSecondsToTime("604800.123456789", &t));
  EXPECT_EQ(t, 604'800'123'456'789);
  EXPECT_TRUE(ParseSecondsToTime("2", &t));
  EXPECT_EQ(t, 2'000'000'000);
  EXPECT_TRUE(ParseSecondsToTime(".5", &t));
  EXPECT_EQ(t, 500'000'000);
  EXPECT_TRUE(ParseSecondsToTime("-1.5", &t));
  EXPECT_EQ(t, -1'500'000'000);
  // More than 9 digits round half up on the 10th.
  EXPECT_TRUE(ParseSecondsToTime("0.30000000000000004", &t));
  EXPECT_EQ(t, 300'000'000);
  EXPECT_TRUE(ParseSecondsToTime("0.0000000015", &t));
  EXPECT_EQ(t, 2);
  EXPECT_TRUE(ParseSecondsToTime("1e-05", &t));
  EXPECT_EQ(t, 10'000);
}

TEST(ParseSecondsToTime, RejectsJunkAndHugeValues) {
  SimTime t;
  EXPECT_FALSE(ParseSecondsToTime("", &t));
  EXPECT_FALSE(ParseSecondsToTime(".", &t));
  EXPECT_FALSE(ParseSecondsToTime("-", &t));
  EXPECT_FALSE(ParseSecondsToTime("1.2.3", &t));
  EXPECT_FALSE(ParseSecondsToTime("abc", &t));
  EXPECT_FALSE(ParseSecondsToTime("nan", &t));
  EXPECT_FALSE(ParseSecondsToTime("inf", &t));
  EXPECT_FALSE(ParseSecondsToTime("1e300", &t));
  EXPECT_FALSE(ParseSecondsToTime("99999999999", &t));
}

TEST(QuoteForMessage, EscapesControlBytesAndCutsLongText) {
  EXPECT_EQ(QuoteForMessage("abc"), "\"abc\"");
  EXPECT_EQ(QuoteForMessage("a\nb\"c"), "\"a\\x0ab\\\"c\"");
  EXPECT_EQ(QuoteForMessage("abcdef", 3), "\"abc...\"");
}

}  // namespace
}  // namespace fleetsim
