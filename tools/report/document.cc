#include "tools/report/document.h"

#include "tools/report/text.h"

namespace fleetsim::report {
namespace {

constexpr const char* kStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#222;line-height:1.4}"
    "h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:8px 0;font-size:.9em}"
    "th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}code{font-size:.9em;background:#f6f6f6;word-break:break-all}"
    ".note{background:#fff6db;border-left:4px solid #e0b000;padding:6px 10px}"
    ".empty{color:#777;font-style:italic}svg.plot{display:block;margin:12px 0;max-width:100%;height:auto}";

// A Markdown table cell: pipes escaped, line breaks folded.
std::string MdCell(const Cell& c) {
  std::string out;
  for (char ch : c.text) {
    if (ch == '|') {
      out += "\\|";
    } else if (ch == '\n') {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return c.code && !out.empty() ? "`" + out + "`" : out;
}

}  // namespace

Document::Document(const std::string& title) : title_(title) {}

void Document::Heading(int level, const std::string& text) {
  const std::string h = "h" + std::to_string(level);
  html_ += "<" + h + ">" + HtmlEscape(text) + "</" + h + ">\n";
  md_ += std::string(level, '#') + " " + text + "\n\n";
}

void Document::Paragraph(const std::string& text) {
  html_ += "<p>" + HtmlEscape(text) + "</p>\n";
  md_ += text + "\n\n";
}

void Document::Note(const std::string& text) {
  html_ += "<p class=\"note\">" + HtmlEscape(text) + "</p>\n";
  md_ += "> **Note:** " + text + "\n\n";
}

void Document::List(const std::vector<std::string>& items) {
  html_ += "<ul>\n";
  for (const std::string& i : items) {
    html_ += "<li>" + HtmlEscape(i) + "</li>\n";
    md_ += "- " + i + "\n";
  }
  html_ += "</ul>\n";
  md_ += "\n";
}

void Document::Table(const std::vector<std::string>& header, const std::vector<std::vector<Cell>>& rows) {
  html_ += "<table>\n<thead><tr>";
  md_ += "|";
  for (const std::string& h : header) {
    html_ += "<th>" + HtmlEscape(h) + "</th>";
    md_ += " " + MdCell(h) + " |";
  }
  html_ += "</tr></thead>\n<tbody>\n";
  md_ += "\n|";
  for (size_t i = 0; i < header.size(); ++i) md_ += "---|";
  md_ += "\n";
  for (const std::vector<Cell>& row : rows) {
    html_ += "<tr>";
    md_ += "|";
    for (size_t i = 0; i < header.size(); ++i) {
      const Cell c = i < row.size() ? row[i] : Cell("");
      const std::string t = HtmlEscape(c.text);
      html_ += "<td>" + (c.code ? "<code>" + t + "</code>" : t) + "</td>";
      md_ += " " + MdCell(c) + " |";
    }
    html_ += "</tr>\n";
    md_ += "\n";
  }
  html_ += "</tbody>\n</table>\n";
  md_ += "\n";
}

void Document::Plot(const PlotSpec& spec, const std::string& empty_note) {
  const std::string svg = RenderPlot(spec);
  if (svg.empty()) {
    html_ += "<p class=\"empty\">" + HtmlEscape(empty_note) + "</p>\n";
    md_ += "*" + empty_note + "*\n\n";
    return;
  }
  html_ += "<figure>" + svg + "</figure>\n";
  md_ += "*Plot in report.html: " + spec.title + ".*\n\n";
}

ReportFiles Document::Finish() const {
  ReportFiles f;
  f.html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<link rel=\"icon\" href=\"data:,\">\n<title>" +
      HtmlEscape(title_) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n" + html_ + "</body>\n</html>\n";
  f.md = md_;
  return f;
}

}  // namespace fleetsim::report
