// ember-bench --report (report.h): report.md and one SVG bar chart per suite.
#include "report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace ember::bench {

namespace {

std::string format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Text for SVG and Markdown: the few characters either treats specially.
std::string escape(const std::string& s, bool markdown) {
  std::string out;
  for (char c : s) {
    if (!markdown && c == '&') out += "&amp;";
    else if (!markdown && c == '<') out += "&lt;";
    else if (!markdown && c == '>') out += "&gt;";
    else if (markdown && c == '|') out += "\\|";
    else out += c;
  }
  return out;
}

bool lower_is_better(const Record& r) { return r.unit.find("lower is better") != std::string::npos; }

// Ember's figure relative to the peer's: > 1 means Ember is slower (times) or
// slower-moving (rates), so "x slower" reads the same for both kinds of unit.
std::optional<double> slowdown(const Record& r, std::optional<double> other) {
  if (!other || *other <= 0 || r.ember <= 0) return std::nullopt;
  return lower_is_better(r) ? r.ember / *other : *other / r.ember;
}

// The suites in the order their records arrived.
std::vector<std::string> suite_order(const std::vector<Record>& records) {
  std::vector<std::string> order;
  for (const Record& r : records)
    if (std::find(order.begin(), order.end(), r.suite) == order.end()) order.push_back(r.suite);
  return order;
}

}  // namespace

std::string machine_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores online";
}

double load_average() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : 0;
}

std::string suite_svg(const std::string& suite, const std::vector<Record>& records, const RunContext& ctx) {
  // Layout: a label column, then bars up to `bar_w` wide; per case one row per
  // series present, a gap between cases; a legend on top, the caption below.
  const int label_w = 330, bar_w = 380, value_w = 200, row_h = 14, gap = 10, top = 56;
  const int width = label_w + bar_w + value_w + 20;
  struct Series {
    const char* name;
    const char* color;
  };
  const Series ember{"Ember", "#d9480f"}, peer{"peer", "#1c7ed6"}, floor{"floor", "#868e96"};
  std::ostringstream body;
  int y = top;
  for (const Record& r : records) {
    std::vector<std::pair<const Series*, double>> bars{{&ember, r.ember}};
    if (r.peer) bars.emplace_back(&peer, *r.peer);
    if (r.floor) bars.emplace_back(&floor, *r.floor);
    double top_value = 0;
    for (const auto& b : bars) top_value = std::max(top_value, b.second);
    const std::string label = r.case_name + " (" + r.unit + ")";
    body << "<text x=\"8\" y=\"" << y + row_h - 3 << "\" class=\"case\">" << escape(label, false) << "</text>\n";
    for (const auto& [series, value] : bars) {
      const double w = top_value > 0 ? bar_w * value / top_value : 0;
      const std::string who = series == &peer && !r.peer_name.empty() ? r.peer_name : series->name;
      body << "<rect x=\"" << label_w << "\" y=\"" << y + 1 << "\" width=\"" << format(std::max(w, 1.0))
           << "\" height=\"" << row_h - 2 << "\" fill=\"" << series->color << "\"><title>" << escape(who, false)
           << ": " << format(value) << " " << escape(r.unit, false) << "</title></rect>\n";
      body << "<text x=\"" << label_w + w + 4 << "\" y=\"" << y + row_h - 3 << "\" class=\"value\">" << format(value)
           << (series == &peer && !r.peer_name.empty() ? " " : "")
           << (series == &peer ? escape(r.peer_name, false) : "") << "</text>\n";
      y += row_h;
    }
    y += gap;
  }
  const int height = y + 40;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\">\n"
      << "<style>.case{font-size:11px;fill:#212529}.value{font-size:10px;fill:#495057}"
         ".title{font-size:15px;font-weight:bold}.caption{font-size:10px;fill:#495057}</style>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"8\" y=\"20\" class=\"title\">ember-bench --suite " << escape(suite, false)
      << ": each case's bars scaled to its largest</text>\n";
  int lx = 8;
  for (const Series* s : {&ember, &peer, &floor}) {
    svg << "<rect x=\"" << lx << "\" y=\"32\" width=\"12\" height=\"12\" fill=\"" << s->color << "\"/>"
        << "<text x=\"" << lx + 16 << "\" y=\"42\" class=\"case\">" << s->name << "</text>\n";
    lx += 80;
  }
  svg << body.str();
  svg << "<text x=\"8\" y=\"" << y + 12 << "\" class=\"caption\">" << escape(ctx.machine, false) << "; "
      << ctx.threads << " threads; " << escape(ctx.date, false) << "</text>\n"
      << "<text x=\"8\" y=\"" << y + 26 << "\" class=\"caption\">" << escape(ctx.kernels, false) << "; load "
      << format(ctx.load_start) << " at the start, " << format(ctx.load_end) << " at the end</text>\n"
      << "</svg>\n";
  return svg.str();
}

bool write_report(const std::string& dir, const std::vector<Record>& records, const RunContext& ctx, std::string* err) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    *err = dir + ": cannot create the report folder: " + ec.message();
    return false;
  }
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) *err = path + ": cannot write the file";
    return static_cast<bool>(out);
  };
  std::ostringstream md;
  md << "# ember-bench report\n\n"
     << "- machine: " << ctx.machine << "\n- kernels: " << ctx.kernels << "\n- threads: " << ctx.threads
     << "\n- date: " << ctx.date << "\n- load average: " << format(ctx.load_start) << " at the start, "
     << format(ctx.load_end) << " at the end (figures from a loaded machine compare only within the run)\n\n"
     << "`ember / peer` and `ember / floor` are how many times slower Ember is (for rates, the inverse "
        "ratio), so below 1 is better than the peer and 1 is at the floor.\n";
  for (const std::string& suite : suite_order(records)) {
    std::vector<Record> rows;
    for (const Record& r : records)
      if (r.suite == suite) rows.push_back(r);
    if (!write(suite + ".svg", suite_svg(suite, rows, ctx))) return false;
    md << "\n## " << suite << "\n\n![" << suite << "](" << suite << ".svg)\n\n"
       << "| case | unit | ember | peer | peer value | floor | ember / peer | ember / floor |\n"
       << "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |\n";
    for (const Record& r : rows) {
      auto opt = [](std::optional<double> v) { return v ? format(*v) : std::string("-"); };
      md << "| " << escape(r.case_name, true) << " | " << escape(r.unit, true) << " | " << format(r.ember) << " | "
         << (r.peer_name.empty() ? "-" : escape(r.peer_name, true)) << " | " << opt(r.peer) << " | " << opt(r.floor)
         << " | " << opt(slowdown(r, r.peer)) << " | " << opt(slowdown(r, r.floor)) << " |\n";
    }
  }
  return write("report.md", md.str());
}

}  // namespace ember::bench
