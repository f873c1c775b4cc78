// A report written once into both of its forms: report.html (a
// self-contained page with inline CSS and SVG plots) and report.md (the same
// headings, text and tables; each plot is named as being in report.html).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/report/report.h"
#include "tools/report/svg.h"

namespace fleetsim::report {

struct Cell {
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT: implicit, for brace-built rows
  Cell(const char* t) : text(t) {}             // NOLINT
  static Cell Code(std::string t) {
    Cell c(std::move(t));
    c.code = true;
    return c;
  }
  std::string text;   // plain text; escaped on output
  bool code = false;  // shown as code (a launch command)
};

class Document {
 public:
  explicit Document(const std::string& title);

  void Heading(int level, const std::string& text);  // level 1..3
  void Paragraph(const std::string& text);
  void Note(const std::string& text);  // a paragraph set apart: a caveat
  void List(const std::vector<std::string>& items);
  void Table(const std::vector<std::string>& header, const std::vector<std::vector<Cell>>& rows);
  // The plot, or `empty_note` in its place when it has no data.
  void Plot(const PlotSpec& spec, const std::string& empty_note);

  ReportFiles Finish() const;

 private:
  std::string title_, html_, md_;
};

}  // namespace fleetsim::report
