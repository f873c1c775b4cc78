#include "model/profile.h"

#include <gtest/gtest.h>

#include <string>

namespace fleetsim {
namespace {

ProfileCurve Curve(std::vector<double> x, std::vector<double> ns) {
  ProfileCurve c;
  c.x = std::move(x);
  c.ns = std::move(ns);
  return c;
}

TEST(ProfileCurve, InterpolatesLinearlyBetweenGridPoints) {
  const ProfileCurve c = Curve({1, 3, 7}, {100, 200, 600});
  EXPECT_DOUBLE_EQ(c.At(1), 100);
  EXPECT_DOUBLE_EQ(c.At(2), 150);
  EXPECT_DOUBLE_EQ(c.At(3), 200);
  EXPECT_DOUBLE_EQ(c.At(6), 500);
  EXPECT_DOUBLE_EQ(c.At(7), 600);
}

TEST(ProfileCurve, BelowTheGridIsTheFirstPoint) {
  const ProfileCurve c = Curve({4, 8}, {100, 300});
  EXPECT_DOUBLE_EQ(c.At(0), 100);
  EXPECT_DOUBLE_EQ(c.At(3.9), 100);
}

TEST(ProfileCurve, AboveTheGridExtrapolatesFromTheLastTwoPoints) {
  const ProfileCurve c = Curve({1, 4, 8}, {50, 100, 300});
  EXPECT_DOUBLE_EQ(c.At(10), 400);  // slope 50 per unit
  EXPECT_DOUBLE_EQ(c.At(16), 700);
}

TEST(ProfileCurve, NoisyFallingTailDoesNotPredictLessTimeForMoreWork) {
  const ProfileCurve c = Curve({1, 2}, {300, 200});
  EXPECT_DOUBLE_EQ(c.At(5), 200);
  EXPECT_DOUBLE_EQ(Curve({5}, {42}).At(1000), 42);
}

Profile Sample() {
  Profile p;
  p.device = "H100-SXM";
  p.source = "unit test \"quoted\"";
  p.date = "2024-05-01";
  p.model = "Llama-2-7B";
  p.gemm[1] = Curve({1, 2, 16}, {156000, 151000.5, 170000.125});
  p.gemm[2] = Curve({1}, {80000});
  p.elementwise[1] = Curve({1, 2}, {20000, 21000});
  p.embedding[1] = Curve({1, 2}, {2000, 3000});
  p.all_reduce_intra_node[2] = Curve({2048, 10240}, {7000, 7000});
  p.all_reduce_intra_node[8] = Curve({2048}, {37000});
  p.send_recv_inter_node = Curve({2048}, {17000});
  p.send_recv_intra_node = Curve({2048, 10240}, {5000, 6000});
  p.notes = {"one", "two"};
  return p;
}

TEST(Profile, WriteThenLoadRoundTrips) {
  const Profile p = Sample();
  std::string text;
  ASSERT_TRUE(WriteProfileJson(p, &text).ok());
  Profile back;
  const Status s = LoadProfile(text, "p.json", &back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(back == p);
  std::string again;
  ASSERT_TRUE(WriteProfileJson(back, &again).ok());
  EXPECT_EQ(again, text);
}

TEST(Profile, CollectivesOnlyProfileNeedsNoModel) {
  Profile p;
  p.device = "H100-SXM";
  p.all_reduce_intra_node[4] = Curve({1, 2}, {3, 4});
  std::string text;
  ASSERT_TRUE(WriteProfileJson(p, &text).ok());
  Profile back;
  ASSERT_TRUE(LoadProfile(text, "p.json", &back).ok());
  EXPECT_FALSE(back.model.has_value());
  EXPECT_TRUE(back == p);
}

std::string Load(const std::string& text) {
  Profile p;
  const Status s = LoadProfile(text, "p.json", &p);
  return s.ok() ? "ok" : s.message();
}

TEST(Profile, RejectsUnknownKeysNamingThePath) {
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "H100-SXM", "bogus": 1})"),
            "p.json: bogus: unknown key (valid: format, device, source, date, model, ops, collectives, notes)");
  const std::string m =
      Load(R"({"format": "fleetsim-profile-1", "device": "d", "model": "m", "ops": {"gemm": {"tp": {"1": [[1, 2]]}, "x": 1}}})");
  EXPECT_EQ(m.rfind("p.json: ops.gemm.x: unknown key", 0), 0u) << m;
}

TEST(Profile, RejectsBadCurvesNamingTheElement) {
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "d", "model": "m",
                     "ops": {"gemm": {"tp": {"1": [[1, 2], [1, 3]]}}}})"),
            "p.json: ops.gemm.tp.1[1]: x must increase strictly along the array");
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "d", "model": "m",
                     "ops": {"gemm": {"tp": {"1": [[1, -2]]}}}})"),
            "p.json: ops.gemm.tp.1[0]: time must be a finite non-negative number of ns");
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "d", "model": "m",
                     "ops": {"gemm": {"tp": {"0": [[1, 2]]}}}})"),
            "p.json: ops.gemm.tp.0: key must be a positive integer");
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "d",
                     "ops": {"gemm": {"tp": {"1": [[1, 2]]}}}})"),
            "p.json: model: required (a model name) when \"ops\" holds measurements");
  EXPECT_EQ(Load(R"({"format": "other", "device": "d"})"),
            "p.json: format: expected \"fleetsim-profile-1\", got \"other\"");
  EXPECT_EQ(Load("{"), "p.json: not valid JSON");
}

}  // namespace
}  // namespace fleetsim
