// The tuning report's page (report.h: RenderReportHtml): plain HTML, inline CSS, inline SVG
// charts drawn here (no script, no chart library), every string from the database escaped.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/report.h"

namespace tessera {
namespace {

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, sans-serif; color: #1d2330; margin: 24px auto; max-width: 1080px;
       padding: 0 16px; background: #f6f7f9; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 0 0 2px; }
h3 { font-size: 14px; margin: 14px 0 4px; color: #445; }
.meta, .target { color: #5a6270; font-size: 13px; }
.task { background: #fff; border: 1px solid #dde1e7; border-radius: 8px; padding: 16px 18px;
        margin: 18px 0; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 10px; }
svg { background: #fff; border: 1px solid #e6e9ee; border-radius: 4px; }
.grid { stroke: #eceff3; } .axis { stroke: #8a93a3; }
.tick { font-size: 11px; fill: #5a6270; } .label { font-size: 12px; fill: #2b3240; }
.trial-dot, .legend-dot { fill: #9aa6b8; } .curve-line { fill: none; stroke: #2563eb; stroke-width: 2.2; }
.empty { font-size: 13px; fill: #8a93a3; }
.roofline { stroke: #16a34a; stroke-width: 1.5; stroke-dasharray: 6 4; }
.roofline-label { font-size: 11px; fill: #15803d; }
.anchor { stroke: #9333ea; stroke-width: 1.5; stroke-dasharray: 2 3; }
.anchor-label { font-size: 11px; fill: #7e22ce; }
.model { background: #fff; border: 1px solid #dde1e7; border-radius: 8px; padding: 16px 18px;
         margin: 18px 0; }
table { border-collapse: collapse; margin: 4px 0; font-size: 13px; }
td, th { border-bottom: 1px solid #eceff3; padding: 3px 10px 3px 0; text-align: left;
         vertical-align: top; }
th { color: #5a6270; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: flex; height: 14px; width: 480px; border-radius: 3px; overflow: hidden;
       background: #e6e9ee; margin: 4px 0; }
.bar .measured { background: #2563eb; } .bar .rest { background: #f59e0b; }
.stage-build { background: #f59e0b; } .stage-run { background: #2563eb; }
.stage-verify { background: #16a34a; } .stage-search { background: #9333ea; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; }
pre.trace { background: #f3f5f8; padding: 8px 10px; border-radius: 4px; font-size: 12px;
            overflow-x: auto; max-height: 360px; }
.ok { color: #15803d; } .warn { color: #b45309; }
)css";

std::string Escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Seconds(double s) {
  if (s <= 0) return "0 s";
  if (s < 1e-3) return absl::StrFormat("%.1f us", s * 1e6);
  if (s < 1) return absl::StrFormat("%.2f ms", s * 1e3);
  if (s < 120) return absl::StrFormat("%.2f s", s);
  if (s < 7200) return absl::StrFormat("%.1f min", s / 60);
  return absl::StrFormat("%.1f h", s / 3600);
}

std::string Number(double v) {
  if (v == 0) return "0";
  if (std::fabs(v) >= 100) return absl::StrFormat("%.0f", v);
  if (std::fabs(v) >= 1) return absl::StrFormat("%.3g", v);
  return absl::StrFormat("%.2g", v);
}

std::string UtcTime(double timestamp) {
  std::time_t t = static_cast<std::time_t>(timestamp);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// A step of 1, 2 or 5 times a power of ten giving about five intervals over [0, top].
double TickStep(double top) {
  double raw = top / 5;
  double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

// One chart: each trial as a dot, the best so far as a step line. `by_time`: x is seconds
// since the first record, else the trial number.
std::string Chart(const ReportTask& t, bool by_time) {
  constexpr double kWidth = 500, kHeight = 250, kLeft = 58, kRight = 14, kTop = 30, kBottom = 42;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const std::vector<CurvePoint>& pts = t.curve;
  double x_max = pts.empty() ? 0 : static_cast<double>(pts.back().trial);
  if (by_time) {
    x_max = 0;
    for (const CurvePoint& p : pts) x_max = std::max(x_max, p.seconds);
  }
  const bool one_time = x_max <= 0;  // by time, and every record has one commit time
  if (x_max <= 0) x_max = 1;
  double y_max = 0;
  for (const CurvePoint& p : pts) y_max = std::max(y_max, p.gflops);
  // Reference lines, the roofline and the anchors: one is drawn when it is at most 4x the best
  // (farther, the curves would be flat lines at the bottom); the chart then says where it is.
  struct Reference {
    std::string cls, label;
    double value;
    bool drawn;
  };
  std::vector<Reference> refs;
  const double data_max = y_max;
  auto add_reference = [&](const std::string& cls, const std::string& label, double value) {
    if (value > 0) refs.push_back({cls, label, value, data_max <= 0 || value <= 4 * data_max});
  };
  add_reference("roofline", "roofline", t.roofline_gflops);
  for (const ReportTask::Anchor& a : t.anchors) add_reference("anchor", a.name, a.gflops);
  for (const Reference& r : refs) {
    if (r.drawn) y_max = std::max(y_max, r.value);
  }
  const double x_step = TickStep(x_max), y_step = y_max > 0 ? TickStep(y_max * 1.05) : 1;
  x_max = std::ceil(x_max / x_step - 1e-9) * x_step;
  y_max = y_max > 0 ? std::ceil(y_max * 1.05 / y_step) * y_step : 1;
  auto X = [&](double v) { return kLeft + v / x_max * plot_w; };
  auto Y = [&](double v) { return kTop + plot_h - v / y_max * plot_h; };
  auto XOf = [&](const CurvePoint& p) {
    return X(by_time ? p.seconds : static_cast<double>(p.trial));
  };

  std::string s = absl::StrFormat(
      "<svg class=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" role=\"img\" data-points=\"%d\">",
      by_time ? "time-curve" : "tuning-curve", kWidth, kHeight, kWidth, kHeight, pts.size());
  absl::StrAppend(&s, "<title>", Escape(t.label), " on ", Escape(t.target), ": best ", t.unit,
                  " against ", by_time ? "wall time" : "trials", "</title>");
  if (one_time) {
    // Records carry their batch's commit time: one batch, one timestamp, no curve in time.
    absl::StrAppendFormat(&s,
                          "<rect class=\"grid\" fill=\"none\" x=\"%.1f\" y=\"%.1f\" "
                          "width=\"%.1f\" height=\"%.1f\"/><text class=\"empty\" x=\"%.1f\" "
                          "y=\"%.1f\" text-anchor=\"middle\">wall time: every record has the "
                          "same commit time (one batch)</text></svg>",
                          kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kTop + plot_h / 2);
    return s;
  }
  for (double v = 0; v <= y_max + 1e-9 * y_max; v += y_step) {
    absl::StrAppendFormat(
        &s,
        "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
        kLeft, kLeft + plot_w, Y(v), Y(v), kLeft - 6, Y(v) + 4, Number(v));
  }
  for (double v = 0; v <= x_max + 1e-9 * x_max; v += x_step) {
    absl::StrAppendFormat(&s,
                          "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
                          "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s"
                          "</text>",
                          X(v), X(v), kTop, kTop + plot_h, X(v), kTop + plot_h + 15,
                          by_time ? Seconds(v) : Number(v));
  }
  absl::StrAppendFormat(
      &s,
      "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
      "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
      "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>"
      "<text class=\"label\" transform=\"translate(14 %.1f) rotate(-90)\" "
      "text-anchor=\"middle\">%s</text>",
      kLeft, kLeft + plot_w, kTop + plot_h, kTop + plot_h, kLeft, kLeft, kTop, kTop + plot_h,
      kLeft + plot_w / 2, kHeight - 8,
      by_time ? "wall time since the first record" : "trials (records, in commit order)",
      kTop + plot_h / 2, t.unit);
  // Legend, above the plot.
  absl::StrAppendFormat(&s,
                        "<line class=\"curve-line\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                        "y2=\"%.1f\"/><text class=\"tick\" x=\"%.1f\" y=\"%.1f\">best so far"
                        "</text><circle class=\"legend-dot\" cx=\"%.1f\" cy=\"%.1f\" r=\"2\"/>"
                        "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">each trial</text>",
                        kLeft, kLeft + 18, 13.0, 13.0, kLeft + 22, 17.0, kLeft + 100, 13.0,
                        kLeft + 106, 17.0);
  int above = 0;  // labels of lines above the chart, stacked at its top
  for (const Reference& r : refs) {
    if (r.drawn) {
      absl::StrAppendFormat(
          &s,
          "<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>"
          "<text class=\"%s-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s %s"
          "</text>",
          r.cls, kLeft, kLeft + plot_w, Y(r.value), Y(r.value), r.cls, kLeft + plot_w - 4,
          Y(r.value) + 13, Escape(r.label), Number(r.value));
    } else {
      absl::StrAppendFormat(
          &s,
          "<text class=\"%s-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s %s %s: "
          "above the chart</text>",
          r.cls, kLeft + plot_w - 4, kTop + 12 + 13 * above++, Escape(r.label), Number(r.value),
          t.unit);
    }
  }
  for (const CurvePoint& p : pts) {
    if (p.gflops > 0) {
      absl::StrAppendFormat(&s, "<circle class=\"trial-dot\" cx=\"%.1f\" cy=\"%.1f\" r=\"2\"/>",
                            XOf(p), Y(p.gflops));
    }
  }
  std::string path;
  for (const CurvePoint& p : pts) {
    if (p.best_gflops <= 0) continue;
    if (path.empty()) {
      path = absl::StrFormat("M%.1f %.1f", XOf(p), Y(p.best_gflops));
    } else {
      absl::StrAppendFormat(&path, " H%.1f V%.1f", XOf(p), Y(p.best_gflops));
    }
  }
  if (path.empty()) {
    absl::StrAppendFormat(&s,
                          "<text class=\"empty\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
                          "no successful trial</text>",
                          kLeft + plot_w / 2, kTop + plot_h / 2);
  } else {
    absl::StrAppendFormat(&path, " H%.1f", X(x_max));
    absl::StrAppend(&s, "<path class=\"curve-line\" d=\"", path, "\"/>");
  }
  return s + "</svg>";
}

// The trace as one instruction a line: "l5, l6 = Split(l2, None, 4)  attrs [1]", with the
// decision of sampling instructions.
std::string TraceText(const std::string& trace_json) {
  nlohmann::json j = nlohmann::json::parse(trace_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array() || j.size() != 2 || !j[0].is_array()) return trace_json;
  std::map<size_t, std::string> decisions;
  if (j[1].is_array()) {
    for (const nlohmann::json& d : j[1]) {
      if (d.is_array() && d.size() == 2 && d[0].is_number_unsigned()) {
        decisions[d[0].get<size_t>()] = d[1].dump();
      }
    }
  }
  auto item = [](const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  std::string out;
  for (size_t i = 0; i < j[0].size(); ++i) {
    const nlohmann::json& inst = j[0][i];
    if (!inst.is_array() || inst.size() != 4) return trace_json;
    std::vector<std::string> inputs, outputs;
    for (const nlohmann::json& v : inst[1]) inputs.push_back(item(v));
    for (const nlohmann::json& v : inst[3]) outputs.push_back(item(v));
    if (!outputs.empty()) absl::StrAppend(&out, absl::StrJoin(outputs, ", "), " = ");
    absl::StrAppend(&out, item(inst[0]), "(", absl::StrJoin(inputs, ", "), ")");
    if (inst[2].is_array() && !inst[2].empty()) absl::StrAppend(&out, "  attrs ", inst[2].dump());
    if (auto it = decisions.find(i); it != decisions.end()) {
      absl::StrAppend(&out, "  decision ", it->second);
    }
    out += "\n";
  }
  return out;
}

void AppendRow(std::string* html, const std::string& name, const std::string& value) {
  absl::StrAppend(html, "<tr><th>", Escape(name), "</th><td>", Escape(value), "</td></tr>");
}

// "Where the time went" for records without stage times (stored before schema 3): the span
// of their commits against the kernel time measured. Leaves the paragraph open.
void AppendSpanOnly(const ReportTask& t, std::string* h) {
  double rest = std::max(0.0, t.span_seconds - t.measured_seconds);
  double total = std::max(t.span_seconds, t.measured_seconds);
  double measured_pct = total > 0 ? 100 * t.measured_seconds / total : 0;
  if (t.span_seconds > 0) {
    absl::StrAppendFormat(h,
                          "<div class=\"bar\"><div class=\"measured\" style=\"width:%.2f%%\">"
                          "</div><div class=\"rest\" style=\"width:%.2f%%\"></div></div>",
                          measured_pct, 100 - measured_pct);
    absl::StrAppend(h, "<p>", Seconds(t.span_seconds),
                    " from the first batch's commit to the last; kernel runs measured: ",
                    Seconds(t.measured_seconds), absl::StrFormat(" (%.1f%%)", measured_pct),
                    "; building, checking, searching and waiting: ", Seconds(rest),
                    " (these records were stored without stage times).");
  } else {
    absl::StrAppend(h, "<p>Kernel runs measured: ", Seconds(t.measured_seconds),
                    ". Every record has the same commit time (one batch) and none has stage "
                    "times, so the wall time of the rest (building, checking, searching) is not "
                    "known from the records.");
  }
}

// "Where the time went" from the records' stage times: a bar with one segment per stage in
// proportion, a table of seconds and shares, and what the numbers mean. Leaves the paragraph
// open.
void AppendStages(const ReportTask& t, std::string* h) {
  struct Stage {
    const char* name;
    double seconds;
    const char* what;
  };
  const StageSeconds& s = t.stage_secs;
  const Stage stages[] = {
      {"build", s.build, "code generation and compilation"},
      {"run", s.run, "run steps: loading, warm-up, timed repeats, time-outs"},
      {"verify", s.verify, "checks against the reference"},
      {"search", s.search, "candidate generation and cost-model updates"},
  };
  const double total = s.total();
  absl::StrAppend(h, "<div class=\"bar stages\">");
  for (const Stage& stage : stages) {
    absl::StrAppendFormat(h, "<div class=\"stage-%s\" style=\"width:%.3f%%\" title=\"%s\"></div>",
                          stage.name, total > 0 ? 100 * stage.seconds / total : 0,
                          Escape(absl::StrCat(stage.name, " ", Seconds(stage.seconds))));
  }
  absl::StrAppend(h, "</div><table class=\"stages\">");
  for (const Stage& stage : stages) {
    absl::StrAppendFormat(h,
                          "<tr class=\"stage\"><th><span class=\"swatch stage-%s\"></span> %s</th>"
                          "<td class=\"num\">%s</td><td class=\"num\">%.1f%%</td><td>%s</td></tr>",
                          stage.name, stage.name, Seconds(stage.seconds),
                          total > 0 ? 100 * stage.seconds / total : 0, stage.what);
  }
  absl::StrAppend(h, "</table><p>", Seconds(total), " spent on ", t.timed_records,
                  t.timed_records == 1 ? " candidate" : " candidates");
  if (t.timed_records < t.trials) {
    absl::StrAppend(h, " (", t.trials - t.timed_records, " of the ", t.trials,
                    " records were stored without stage times)");
  }
  absl::StrAppend(h, "; kernel time measured: ", Seconds(t.measured_seconds), ".");
  if (t.span_seconds > 0) {
    absl::StrAppend(h, " The records were committed over ", Seconds(t.span_seconds),
                    "; builds run in parallel and several workers measure at once, so the "
                    "stages can add up to more than that.");
  }
}

// The work per second of `r`: GFLOP/s, or calls per second for a function without arithmetic
// (the curves' unit).
double Rate(const ReportTask& t, const TuningRecord& r) {
  return t.flops > 0 ? t.flops / r.mean_secs() / 1e9 : 1 / r.mean_secs();
}

std::string TaskSection(const ReportTask& t, size_t index) {
  std::string h = absl::StrFormat("<section class=\"task\" id=\"task-%d\">", index + 1);
  absl::StrAppend(
      &h, "<h2>", Escape(t.label), "</h2><div class=\"target\">on ", Escape(t.target), " &middot; ",
      t.trials, " trials, ", t.succeeded, " ran, ", t.verified, " verified",
      t.remeasured > 0 ? absl::StrCat(" (", t.remeasured, " re-measured by a runoff)")
                       : std::string(),
      t.flops > 0 ? absl::StrCat(" &middot; ",
                                 t.flops >= 1e9 ? Number(t.flops / 1e9) : Number(t.flops / 1e6),
                                 t.flops >= 1e9 ? " GFLOP" : " MFLOP", " per call")
                  : std::string(),
      "</div>");
  absl::StrAppend(&h, "<div class=\"charts\">", Chart(t, /*by_time=*/false),
                  Chart(t, /*by_time=*/true), "</div>");

  if (const std::optional<TuningRecord>& shown = t.chosen ? t.chosen : t.best; shown) {
    const TuningRecord& b = *shown;
    const double best_rate = Rate(t, b);
    absl::StrAppend(&h, "<h3>Best schedule</h3><table>");
    AppendRow(&h, "latency", Seconds(b.mean_secs()));
    AppendRow(&h, t.unit, Number(best_rate));
    if (t.chosen) {
      AppendRow(&h, "chosen",
                t.passed_over
                    ? absl::StrCat("the default schedule: record ", t.passed_over->id, " (",
                                   Seconds(t.passed_over->mean_secs()),
                                   ") was measured faster by less than 3%, within the timings' "
                                   "noise")
                    : std::string("the fastest (what tessera best returns)"));
    }
    if (t.before_runoff) {
      AppendRow(&h, "runoff",
                absl::StrCat("a runoff changed the best: record ", t.before_runoff->id, " (",
                             Seconds(t.before_runoff->mean_secs()),
                             ") was the best before its program was timed again"));
    }
    if (b.is_retiming()) {
      AppendRow(&h, "timed by",
                b.retimes > 0 ? absl::StrCat("a runoff, re-measuring record ", b.retimes)
                              : std::string("a runoff"));
    }
    if (t.roofline_gflops > 0) {
      AppendRow(
          &h, "roofline",
          absl::StrFormat("%s %s (%s; %s); the best reaches %.1f%% of it",
                          Number(t.roofline_gflops), t.unit,
                          t.memory_bound ? absl::StrFormat("memory-bound at %.2f FLOP/byte of "
                                                           "compulsory traffic",
                                                           t.flops / t.bytes)
                                         : std::string("compute-bound"),
                          t.roofline_source, 100 * best_rate / t.roofline_gflops));
    }
    for (const ReportTask::Anchor& a : t.anchors) {
      AppendRow(&h, "anchor",
                absl::StrFormat("%s: %s %s; the best runs at %.2fx its speed", a.name,
                                Number(a.gflops), t.unit, best_rate / a.gflops));
    }
    AppendRow(&h, "verified", b.verified ? "yes: outputs matched the reference" : "no");
    AppendRow(&h, "record", absl::StrCat(b.id, ", measured ", UtcTime(b.timestamp)));
    AppendRow(&h, "tessera", b.provenance.tessera_version);
    AppendRow(&h, "compiler", b.provenance.compiler);
    AppendRow(&h, "device", b.provenance.device);
    if (!b.provenance.driver.empty()) AppendRow(&h, "driver", b.provenance.driver);
    if (!b.provenance.worker_id.empty()) AppendRow(&h, "worker", b.provenance.worker_id);
    AppendRow(&h, "job", b.job_id.empty() ? "local tune" : b.job_id);
    absl::StrAppend(&h, "</table><pre class=\"trace\">", Escape(TraceText(b.trace_json)), "</pre>");
  } else {
    absl::StrAppend(&h, "<h3>Best schedule</h3><p class=\"warn\">No trial ran successfully.</p>");
  }

  absl::StrAppend(&h, "<h3>Where the time went</h3>");
  if (t.timed_records > 0) {
    AppendStages(t, &h);
  } else {
    AppendSpanOnly(t, &h);
  }
  if (!t.devices.empty()) {
    absl::StrAppend(&h, " Devices: ", Escape(absl::StrJoin(t.devices, "; ")), ".");
  }
  std::vector<std::string> jobs;
  for (const std::string& j : t.job_ids) jobs.push_back(j.empty() ? "local tune" : j);
  absl::StrAppend(&h, " Jobs: ", Escape(absl::StrJoin(jobs, ", ")), ".</p>");

  absl::StrAppend(&h, "<h3>Errors by kind</h3>");
  if (t.errors.empty()) {
    absl::StrAppend(&h, "<p class=\"ok\">None: every trial ran.</p>");
  } else {
    absl::StrAppend(&h,
                    "<table class=\"errors\"><tr><th>kind</th><th>trials</th><th>share</th>"
                    "<th>first message</th></tr>");
    for (const auto& [kind, e] : t.errors) {
      std::string example = e.example.size() > 300 ? e.example.substr(0, 297) + "..." : e.example;
      absl::StrAppendFormat(&h,
                            "<tr><td>%s</td><td class=\"num\">%d</td><td class=\"num\">%.1f%%</td>"
                            "<td>%s</td></tr>",
                            Escape(kind), e.count, 100.0 * e.count / t.trials, Escape(example));
    }
    absl::StrAppend(&h, "</table>");
  }
  return h + "</section>";
}

std::string ModelSection(const ReportModel& m) {
  std::string h = absl::StrCat("<section class=\"model\"><h2>Model ", Escape(m.name),
                               "</h2><div class=\"target\">on ", Escape(m.target), " &middot; ",
                               m.kernels.size(), " kernels</div>");
  absl::StrAppend(&h,
                  "<table class=\"kernels\"><tr><th>kernel</th><th>calls</th><th>schedule</th>"
                  "<th>latency</th><th>calls &times; latency</th><th>share</th></tr>");
  for (const ReportKernel& k : m.kernels) {
    std::string schedule = "default rule (no tuning record)";
    if (k.best_secs > 0) {
      schedule = absl::StrFormat("<a href=\"#task-%d\">tuned</a>%s", k.task + 1,
                                 k.verified ? ", verified" : ", not verified");
    } else if (k.task >= 0) {
      schedule = absl::StrFormat(
          "default rule (<a href=\"#task-%d\">every tuning trial failed</a>)", k.task + 1);
    }
    absl::StrAppend(&h, "<tr class=\"", k.best_secs > 0 ? "tuned" : "default", "\"><td>",
                    Escape(k.name), "</td><td class=\"num\">", k.weight, "</td><td>", schedule,
                    "</td>");
    if (k.best_secs > 0) {
      const double total = k.weight * k.best_secs;
      absl::StrAppendFormat(&h,
                            "<td class=\"num\">%s</td><td class=\"num\">%s</td>"
                            "<td class=\"num\">%.1f%%</td></tr>",
                            Seconds(k.best_secs), Seconds(total),
                            m.tuned_seconds > 0 ? 100 * total / m.tuned_seconds : 0.0);
    } else {
      absl::StrAppend(&h, "<td>&mdash;</td><td>&mdash;</td><td>&mdash;</td></tr>");
    }
  }
  absl::StrAppend(&h, "</table><p>Latency of the tuned kernels, run back to back: ",
                  Seconds(m.tuned_seconds), " per inference (sum of calls &times; best).");
  if (m.untuned > 0) {
    absl::StrAppend(&h, " ", m.untuned, " of ", m.kernels.size(),
                    " kernels have no successful record on this target and run with a default "
                    "schedule rule, whose latency the records do not hold: they are not in the "
                    "sum or the shares (<code>tessera exec</code> times the whole model).");
  }
  return h + "</p></section>";
}

}  // namespace

std::string RenderReportHtml(const std::vector<ReportTask>& tasks, const ReportOptions& options,
                             const std::vector<ReportModel>& models) {
  std::string h =
      absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>",
                   Escape(options.title), "</title><style>", kStyle, "</style></head><body><h1>",
                   Escape(options.title), "</h1><div class=\"meta\">");
  int64_t trials = 0, ran = 0;
  for (const ReportTask& t : tasks) {
    trials += t.trials;
    ran += t.succeeded;
  }
  if (!options.source.empty())
    absl::StrAppend(&h, "Records: ", Escape(options.source), " &middot; ");
  absl::StrAppend(&h, tasks.size(), " tasks, ", trials, " trials, ", ran, " ran");
  if (!options.generated_at.empty()) {
    absl::StrAppend(&h, " &middot; generated ", Escape(options.generated_at));
  }
  absl::StrAppend(&h, "</div>");
  if (tasks.empty()) {
    absl::StrAppend(&h, "<p>The database holds no records.</p>");
  } else {
    absl::StrAppend(&h,
                    "<table class=\"summary\"><tr><th>task</th><th>target</th><th>trials</th>"
                    "<th>best latency</th><th>best</th><th>verified</th></tr>");
    for (size_t i = 0; i < tasks.size(); ++i) {
      const ReportTask& t = tasks[i];
      absl::StrAppendFormat(
          &h, "<tr><td><a href=\"#task-%d\">%s</a></td><td>%s</td><td class=\"num\">%d</td>", i + 1,
          Escape(t.label), Escape(t.target), t.trials);
      if (const std::optional<TuningRecord>& shown = t.chosen ? t.chosen : t.best; shown) {
        absl::StrAppend(&h, "<td class=\"num\">", Seconds(shown->mean_secs()),
                        "</td><td class=\"num\">", Number(Rate(t, *shown)), " ", t.unit,
                        "</td><td>", shown->verified ? "yes" : "no", "</td></tr>");
      } else {
        absl::StrAppend(&h, "<td>&mdash;</td><td>&mdash;</td><td>&mdash;</td></tr>");
      }
    }
    absl::StrAppend(&h, "</table>");
  }
  for (const ReportModel& m : models) absl::StrAppend(&h, ModelSection(m));
  for (size_t i = 0; i < tasks.size(); ++i) absl::StrAppend(&h, TaskSection(tasks[i], i));
  return h + "</body></html>\n";
}

}  // namespace tessera
