#include "sim/traffic/timestamp.h"

#include <gtest/gtest.h>

#include <string>

namespace fleetsim {
namespace {

// Reference: counts days one at a time from 1970-01-01.
int64_t DaysByCounting(int y, int m, int d) {
  auto leap = [](int yy) { return (yy % 4 == 0 && yy % 100 != 0) || yy % 400 == 0; };
  const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t days = 0;
  for (int yy = 1970; yy < y; ++yy) days += leap(yy) ? 366 : 365;
  for (int mm = 1; mm < m; ++mm) days += mdays[mm - 1] + (mm == 2 && leap(y) ? 1 : 0);
  return days + d - 1;
}

TEST(DaysFromCivil, MatchesDayByDayCountingAcrossLeapYears) {
  for (int y : {1970, 1999, 2000, 2023, 2024, 2100, 2262}) {
    for (int m = 1; m <= 12; ++m) {
      for (int d : {1, 15, 28}) EXPECT_EQ(DaysFromCivil(y, m, d), DaysByCounting(y, m, d));
    }
  }
  EXPECT_EQ(DaysFromCivil(2024, 2, 29), DaysByCounting(2024, 2, 29));
  EXPECT_EQ(DaysFromCivil(1969, 12, 31), -1);
}

int64_t Parse(const std::string& s) {
  int64_t ns = -1;
  const char* why = nullptr;
  EXPECT_TRUE(ParseTimestamp(s, &ns, &why)) << s << ": " << (why ? why : "");
  return ns;
}

TEST(ParseTimestamp, ReadsAzure2023Format) {
  // 2023-11-16 is day 19677 since the epoch.
  EXPECT_EQ(Parse("2023-11-16 18:17:03.9799600"),
            (19677LL * 86400 + 18 * 3600 + 17 * 60 + 3) * 1'000'000'000 + 979'960'000);
}

TEST(ParseTimestamp, ReadsAzure2024FormatWithOffsets) {
  const int64_t base = Parse("2024-05-10 00:00:00");
  EXPECT_EQ(Parse("2024-05-10 00:00:00.009930+00:00") - base, 9'930'000);
  EXPECT_EQ(Parse("2024-05-10 00:00:00.009930Z") - base, 9'930'000);
  EXPECT_EQ(Parse("2024-05-10T00:00:00.1") - base, 100'000'000);
  EXPECT_EQ(Parse("2024-05-10 02:30:00+02:30") - base, 0);
  EXPECT_EQ(Parse("2024-05-09 22:00:00-02:00") - base, 0);
  EXPECT_EQ(Parse("2024-05-10 00:00:00.123456789") - base, 123'456'789);
  EXPECT_EQ(Parse("1970-01-01 00:00:00"), 0);
}

TEST(ParseTimestamp, RejectsMalformedTimestamps) {
  for (const char* bad :
       {"", "2023-11-16", "2023-11-16 18:17", "2023/11/16 18:17:03", "2023-13-01 00:00:00",
        "2023-02-29 00:00:00", "2023-11-31 00:00:00", "2023-11-16 24:00:00",
        "2023-11-16 18:60:00", "2023-11-16 18:17:03.", "2023-11-16 18:17:03.1234567890",
        "2023-11-16 18:17:03+0000", "2023-11-16 18:17:03 ", "1969-12-31 23:59:59",
        "2263-01-01 00:00:00", "9999-01-01 00:00:00", "2023-11-16 18:17:03.5+25:00",
        "2023-11-16 18:17:03x"}) {
    int64_t ns;
    const char* why = nullptr;
    EXPECT_FALSE(ParseTimestamp(bad, &ns, &why)) << bad;
    EXPECT_NE(why, nullptr) << bad;
  }
}

}  // namespace
}  // namespace fleetsim
