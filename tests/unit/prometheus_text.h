// A strict reader of the Prometheus text exposition format (0.0.4), for tests of what ohiod and
// ohioctl write: every line must be a HELP, a TYPE, a comment or a sample `name{labels} value`;
// a family's TYPE comes before its samples and its samples are contiguous; histogram buckets
// carry `le`, are cumulative and end with +Inf equal to _count. Any deviation is an error
// naming the line.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace ohio::testing {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromFamily {
  std::string type;
  std::string help;
  std::vector<PromSample> samples;
};

struct PromText {
  bool ok = false;
  std::string error;
  std::map<std::string, PromFamily> families;

  // The value of the sample with exactly these labels; NaN if there is none.
  double Value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& [family, f] : families) {
      for (const auto& s : f.samples) {
        if (s.name == name && s.labels == labels) return s.value;
      }
    }
    return std::nan("");
  }
};

namespace prom_detail {

inline bool MetricName(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_' || s[0] == ':')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':')) return false;
  }
  return true;
}

inline bool LabelName(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

inline bool ParseValue(const std::string& s, double* v) {
  if (s == "+Inf" || s == "Inf") return *v = INFINITY, true;
  if (s == "-Inf") return *v = -INFINITY, true;
  if (s == "NaN") return *v = NAN, true;
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && !std::isinf(*v) && !std::isnan(*v);
}

// The family a sample belongs to: histograms own name_bucket, name_sum and name_count.
inline std::string FamilyOf(const std::string& name, const std::map<std::string, PromFamily>& families) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      auto it = families.find(name.substr(0, name.size() - s.size()));
      if (it != families.end() && it->second.type == "histogram") return it->first;
    }
  }
  return name;
}

}  // namespace prom_detail

inline PromText ParsePrometheusText(const std::string& text) {
  using namespace prom_detail;
  PromText out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  std::string current;           // family whose samples are being read
  std::set<std::string> closed;  // families whose samples ended
  auto fail = [&](const std::string& why) {
    out.ok = false;
    out.error = "line " + std::to_string(lineno) + ": " + why + ": '" + line + "'";
    return out;
  };
  auto bad = [&](const std::string& why) {
    out.ok = false;
    out.error = why;
    return out;
  };
  if (!text.empty() && text.back() != '\n') return bad("the text must end with a newline");
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line.substr(1));
      std::string keyword, name;
      words >> keyword >> name;
      if (keyword != "HELP" && keyword != "TYPE") continue;  // a plain comment
      if (!MetricName(name)) return fail("bad metric name in " + keyword);
      std::string rest;
      std::getline(words, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      PromFamily& f = out.families[name];
      if (!f.samples.empty()) return fail(keyword + " after the family's samples");
      if (keyword == "HELP") {
        if (!f.help.empty()) return fail("second HELP");
        if (rest.empty()) return fail("empty HELP");
        f.help = rest;
      } else {
        if (!f.type.empty()) return fail("second TYPE");
        if (rest != "counter" && rest != "gauge" && rest != "histogram" && rest != "summary" && rest != "untyped") {
          return fail("unknown type");
        }
        f.type = rest;
      }
      continue;
    }
    PromSample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (!MetricName(s.name)) return fail("bad metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        if (eq == std::string::npos) return fail("label without '='");
        const std::string label = line.substr(i, eq - i);
        if (!LabelName(label)) return fail("bad label name '" + label + "'");
        if (eq + 1 >= line.size() || line[eq + 1] != '"') return fail("label value not quoted");
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            if (++j >= line.size()) return fail("dangling escape");
            if (line[j] == 'n') {
              value += '\n';
            } else if (line[j] == '\\' || line[j] == '"') {
              value += line[j];
            } else {
              return fail("bad escape");
            }
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) return fail("unterminated label value");
        if (!s.labels.emplace(label, value).second) return fail("label repeated");
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return fail("unterminated label set");
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') return fail("expected a space before the value");
    std::istringstream rest(line.substr(i + 1));
    std::string value, timestamp, extra;
    rest >> value >> timestamp >> extra;
    if (!extra.empty()) return fail("trailing text");
    if (!ParseValue(value, &s.value)) return fail("bad value");
    if (!timestamp.empty()) {
      char* end = nullptr;
      std::strtoll(timestamp.c_str(), &end, 10);
      if (*end != '\0') return fail("bad timestamp");
    }
    const std::string family = FamilyOf(s.name, out.families);
    auto f = out.families.find(family);
    if (f == out.families.end() || f->second.type.empty()) return fail("sample without a TYPE for " + family);
    if (family != current) {
      if (closed.count(family)) return fail("samples of " + family + " are not contiguous");
      if (!current.empty()) closed.insert(current);
      current = family;
    }
    if (f->second.type == "histogram") {
      if (s.name == family) return fail("a histogram's samples are _bucket, _sum and _count");
      if (s.name == family + "_bucket" && !s.labels.count("le")) return fail("bucket without le");
      if (s.name != family + "_bucket" && s.labels.count("le")) return fail("le outside a bucket");
    } else if (f->second.type == "counter" && s.value < 0) {
      return fail("negative counter");
    }
    f->second.samples.push_back(std::move(s));
  }
  // Each histogram series: buckets cumulative, the last +Inf, equal to _count.
  for (const auto& [name, f] : out.families) {
    if (f.type.empty()) return bad("family " + name + " has HELP but no TYPE");
    if (f.type != "histogram") continue;
    std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> buckets;
    std::map<std::map<std::string, std::string>, double> counts;
    for (const auto& s : f.samples) {
      auto labels = s.labels;
      if (s.name == name + "_bucket") {
        double le;
        const std::string bound = labels["le"];
        if (!ParseValue(bound, &le) || std::isnan(le)) return bad(name + ": bad le '" + bound + "'");
        labels.erase("le");
        buckets[labels].push_back({le, s.value});
      } else if (s.name == name + "_count") {
        counts[labels] = s.value;
      }
    }
    for (const auto& [labels, series] : buckets) {
      for (size_t k = 1; k < series.size(); ++k) {
        if (series[k].first <= series[k - 1].first || series[k].second < series[k - 1].second) {
          return bad(name + ": buckets not ordered or not cumulative");
        }
      }
      if (series.empty() || !std::isinf(series.back().first)) return bad(name + ": no +Inf bucket");
      auto c = counts.find(labels);
      if (c == counts.end() || c->second != series.back().second) {
        return bad(name + ": _count missing or unlike the +Inf bucket");
      }
    }
  }
  out.ok = true;
  return out;
}

}  // namespace ohio::testing
