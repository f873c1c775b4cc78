#include "calibrate/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace fleetsim::calibrate {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Minimal XML well-formedness: every element opened is closed in order,
// attribute quotes balance, and no '&' starts anything but an entity we
// write. Enough to catch a missing "/>" or an unescaped name.
bool WellFormed(const std::string& xml, std::string* why) {
  std::vector<std::string> open;
  size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      bool entity = false;
      for (const std::string e : {"&amp;", "&lt;", "&gt;", "&quot;"}) {
        entity = entity || xml.compare(i, e.size(), e) == 0;
      }
      if (!entity) {
        *why = "bare & at " + std::to_string(i);
        return false;
      }
    }
    if (xml[i] != '<') {
      if (xml[i] == '>') {
        *why = "bare > at " + std::to_string(i);
        return false;
      }
      ++i;
      continue;
    }
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) {
      *why = "unterminated tag at " + std::to_string(i);
      return false;
    }
    const std::string tag = xml.substr(i + 1, end - i - 1);
    if (Count(tag, "\"") % 2 != 0 || tag.find('<') != std::string::npos) {
      *why = "bad tag <" + tag + ">";
      return false;
    }
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        *why = "unexpected </" + tag.substr(1) + ">";
        return false;
      }
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
    i = end + 1;
  }
  if (!open.empty()) {
    *why = "unclosed <" + open.back() + ">";
    return false;
  }
  return true;
}

ReportSection Section() {
  ReportSection s;
  s.op = "gemm fp32";
  s.fit.size_var = "m";
  s.fit.scale_var = "n*k";
  s.fit.fixed_ns = 1234.5;
  s.fit.knots = {1, 16, 256};
  s.fit.values = {0.125, 0.25, 3.5};
  s.fit.cv_method = "leave-one-group-out over 3 groups";
  s.fit.cv_median_rel_error = 0.04123;
  s.fit.cv_p90_rel_error = 0.123;
  s.fit.samples = 5;
  s.held_out = {{2.0e4, 2.1e4, 0}, {3.5e5, 3.0e5, 0}, {8.0e5, 8.8e5, 1}, {4.0e6, 3.9e6, 2}, {1.2e4, 1.3e4, 2}};
  s.svg_file = "gemm_fp32.svg";
  s.group_names = {{0, "n=768 k=256"}, {2, "a<b & c"}};
  return s;
}

TEST(ReportMarkdown, ShowsEachOperatorsNumbersFactsAndNotes) {
  ReportInput in;
  in.title = "Calibration of cpu";
  in.facts = {{"device", "AMD EPYC"}, {"software", "Eigen 3.4.0 | SSE2"}};
  in.sections.push_back(Section());
  ReportSection bf16 = Section();
  bf16.op = "gemm bf16";
  bf16.fit.fixed_ns = 0;
  bf16.fit.cv_method = "4-fold over 9 distinct sizes";
  bf16.fit.cv_median_rel_error = 0.5;
  bf16.svg_file = "";
  in.sections.push_back(bf16);
  in.notes = {"CPU timings are noisy."};

  const std::string md = ReportMarkdown(in);
  EXPECT_EQ(md.rfind("# Calibration of cpu\n", 0), 0u);
  EXPECT_NE(md.find("| device | AMD EPYC |"), std::string::npos);
  EXPECT_NE(md.find("| software | Eigen 3.4.0 \\| SSE2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("## gemm fp32\n"), std::string::npos);
  EXPECT_NE(md.find("| samples | 5 |"), std::string::npos);
  EXPECT_NE(md.find("| cross-validation | leave-one-group-out over 3 groups |"), std::string::npos);
  EXPECT_NE(md.find("| held-out points | 5 |"), std::string::npos);
  EXPECT_NE(md.find("| held-out median error | 4.12% |"), std::string::npos);
  EXPECT_NE(md.find("| held-out p90 error | 12.30% |"), std::string::npos);
  EXPECT_NE(md.find("| fixed cost | 1234.5 ns |"), std::string::npos);
  EXPECT_NE(md.find("| knots | 3 |"), std::string::npos);
  EXPECT_NE(md.find("| 16 | 0.25 |"), std::string::npos);
  EXPECT_NE(md.find("| 256 | 3.5 |"), std::string::npos);
  EXPECT_NE(md.find("![gemm fp32: held-out predicted vs measured](gemm_fp32.svg)"), std::string::npos);
  EXPECT_NE(md.find("## gemm bf16\n"), std::string::npos);
  EXPECT_NE(md.find("| cross-validation | 4-fold over 9 distinct sizes |"), std::string::npos);
  EXPECT_NE(md.find("| held-out median error | 50.00% |"), std::string::npos);
  EXPECT_NE(md.find("| fixed cost | 0.0 ns |"), std::string::npos);
  EXPECT_EQ(Count(md, "!["), 1u);  // no link without an svg_file
  EXPECT_NE(md.find("## Notes\n\n- CPU timings are noisy.\n"), std::string::npos);
  EXPECT_EQ(md, ReportMarkdown(in));
}

TEST(PredictedVsMeasuredSvg, IsWellFormedWithOneCirclePerPoint) {
  const ReportSection s = Section();
  const std::string svg = PredictedVsMeasuredSvg(s);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  ASSERT_GE(svg.size(), 7u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  std::string why;
  EXPECT_TRUE(WellFormed(svg, &why)) << why << "\n" << svg;
  EXPECT_EQ(Count(svg, "<circle"), s.held_out.size());
  // Decades 10^4 .. 10^7 ns cover the points (1.2e4 .. 4e6).
  for (const char* label : {">10 µs<", ">100 µs<", ">1 ms<", ">10 ms<"}) {
    EXPECT_EQ(Count(svg, label), 2u) << label;  // once per axis
  }
  EXPECT_EQ(Count(svg, ">1 µs<"), 0u);
  // y = x and two dashed band lines.
  EXPECT_EQ(Count(svg, "stroke-dasharray"), 3u);  // two band lines + legend swatch
  // Groups get palette colours in order; names are escaped.
  EXPECT_EQ(Count(svg, "fill=\"#0072B2\" fill-opacity"), 2u);
  EXPECT_EQ(Count(svg, "fill=\"#E69F00\" fill-opacity"), 1u);
  EXPECT_EQ(Count(svg, "fill=\"#009E73\" fill-opacity"), 2u);
  EXPECT_NE(svg.find(">n=768 k=256<"), std::string::npos);
  EXPECT_NE(svg.find(">group 1<"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b &amp; c<"), std::string::npos);
  EXPECT_EQ(svg, PredictedVsMeasuredSvg(s));
}

TEST(PredictedVsMeasuredSvg, PlacesPointsOnLogAxes) {
  ReportSection s = Section();
  // One point per decade corner: 1e4 (bottom left) and 1e6 (top right) on
  // axes spanning exactly 10^4 .. 10^6 ns.
  s.held_out = {{1e4, 1e4, 0}, {1e6, 1e6, 0}, {1e5, 1e5, 0}};
  const std::string svg = PredictedVsMeasuredSvg(s);
  // Plot area: x from 90 to 450, y from 410 (bottom) to 50 (top).
  EXPECT_NE(svg.find("<circle cx=\"90.00\" cy=\"410.00\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("<circle cx=\"450.00\" cy=\"50.00\""), std::string::npos);
  EXPECT_NE(svg.find("<circle cx=\"270.00\" cy=\"230.00\""), std::string::npos);
}

TEST(PredictedVsMeasuredSvg, KeepsPointsTheAxesCannotShowAndEmptySections) {
  ReportSection s = Section();
  s.held_out = {{1e4, 0, 0}, {1e5, -5, 1}, {1e6, NAN, 1}};
  std::string svg = PredictedVsMeasuredSvg(s);
  std::string why;
  EXPECT_TRUE(WellFormed(svg, &why)) << why;
  EXPECT_EQ(Count(svg, "<circle"), 3u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);

  s.held_out.clear();
  svg = PredictedVsMeasuredSvg(s);
  EXPECT_TRUE(WellFormed(svg, &why)) << why;
  EXPECT_EQ(Count(svg, "<circle"), 0u);
}

}  // namespace
}  // namespace fleetsim::calibrate
