#include "iotrace/cli/flags.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/status.h"

namespace iotrace {
namespace {

// The value parsers' errors, whichever parser called them.
absl::Status Usage(const std::string& message) {
  return UsageError(message, "see --help for the options");
}

}  // namespace

FlagParser::FlagParser(Syntax syntax, std::string usage_hint)
    : syntax_(syntax), usage_hint_(std::move(usage_hint)) {}

absl::Status FlagParser::Error(const std::string& message) const {
  return UsageError(message, usage_hint_);
}

void FlagParser::SetArgumentHandler(Handler handler) { argument_handler_ = std::move(handler); }

void FlagParser::Add(std::string long_name, char short_name, bool takes_value,
                     std::string value_name, std::string help, Handler handler) {
  options_.push_back({std::move(long_name), short_name, takes_value, std::move(value_name),
                      std::move(help), std::move(handler), nullptr});
}

void FlagParser::AddSwitch(std::string long_name, char short_name, std::string help, bool* on) {
  Add(std::move(long_name), short_name, false, "", std::move(help), [on](const std::string&) {
    *on = true;
    return absl::OkStatus();
  });
}

void FlagParser::AddString(std::string long_name, char short_name, std::string value_name,
                           std::string help, std::string* value) {
  Add(std::move(long_name), short_name, true, std::move(value_name), std::move(help),
      [value](const std::string& v) {
        *value = v;
        return absl::OkStatus();
      });
}

void FlagParser::AddOptionalValue(std::string long_name, std::string value_name,
                                  std::string help,
                                  std::function<bool(const std::string&)> takes_next,
                                  Handler handler) {
  options_.push_back({std::move(long_name), 0, true, std::move(value_name), std::move(help),
                      std::move(handler), std::move(takes_next)});
}

const FlagParser::Option* FlagParser::FindLong(const std::string& name) const {
  for (const Option& o : options_) {
    if (o.long_name == name) return &o;
  }
  return nullptr;
}

const FlagParser::Option* FlagParser::FindShort(char c) const {
  for (const Option& o : options_) {
    if (o.short_name != 0 && o.short_name == c) return &o;
  }
  return nullptr;
}

absl::Status FlagParser::Parse(const std::vector<std::string>& args,
                               std::vector<std::string>* positional,
                               std::vector<std::string>* rest) const {
  const bool exact = syntax_ == Syntax::kExactWords;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!exact && a == "--") {
      if (rest == nullptr) return Error("unexpected '--'");
      rest->assign(args.begin() + i + 1, args.end());
      return absl::OkStatus();
    }
    const Option* opt = nullptr;
    std::string value;
    bool has_inline = false;
    std::string shown;
    if (a.rfind("--", 0) == 0) {
      std::string name = a.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_inline = true;
      }
      opt = FindLong(name);
      shown = "--" + name;
      if (opt == nullptr) return Error(absl::StrFormat("unknown option '%s'", exact ? a : shown));
      if (!opt->takes_value && has_inline) {
        if (!exact) return Error(absl::StrFormat("option '%s' takes no value", shown));
        value.clear();
        has_inline = false;
      }
    } else if ((a.size() >= 2 && a[0] == '-') || (exact && a == "-")) {
      if (exact && a.size() != 2) return Error(absl::StrFormat("unknown option '%s'", a));
      opt = FindShort(a[1]);
      shown = a.substr(0, 2);
      if (opt == nullptr) return Error(absl::StrFormat("unknown option '%s'", shown));
      if (a.size() > 2) {
        if (!opt->takes_value) return Error(absl::StrFormat("unknown option '%s'", a));
        value = a.substr(2);
        has_inline = true;
      }
    } else if (argument_handler_) {
      IOTRACE_RETURN_IF_ERROR(AsUsageError(argument_handler_(a)));
      continue;
    } else {
      if (positional == nullptr) return Error(absl::StrFormat("unexpected argument '%s'", a));
      positional->push_back(a);
      continue;
    }
    if (opt->takes_next && !has_inline) {
      if (i + 1 < args.size() && opt->takes_next(args[i + 1])) value = args[++i];
    } else if (opt->takes_value && !has_inline) {
      if (i + 1 >= args.size()) {
        return Error(
            exact ? absl::StrFormat("option %s needs a value", shown)
                  : absl::StrFormat("option '%s' needs a value (%s)", shown, opt->value_name));
      }
      value = args[++i];
    }
    if (exact && opt->takes_value && value.empty()) {
      return Error(absl::StrFormat("option %s: empty value", shown));
    }
    // Whatever a handler refuses is in what the user asked for.
    absl::Status s = opt->handler(value);
    if (!s.ok()) return AsUsageError(s);
  }
  return absl::OkStatus();
}

std::string FlagParser::Help() const {
  std::string out;
  for (const Option& o : options_) {
    std::string left = o.short_name ? absl::StrFormat("-%c, --%s", o.short_name, o.long_name)
                                    : absl::StrFormat("    --%s", o.long_name);
    if (o.takes_next) {
      left += "[=" + o.value_name + "]";
    } else if (o.takes_value) {
      left += " " + o.value_name;
    }
    // A name too long for its column puts the text on the next line, under the others'.
    out += left.size() < 30 ? absl::StrFormat("  %-30s %s\n", left, o.help)
                            : absl::StrFormat("  %s\n%33s%s\n", left, "", o.help);
  }
  return out;
}

namespace {

constexpr size_t kHelpWidth = 80;

// `lead`, then the words of `text` in lines of at most kHelpWidth columns, each after the first
// indented by `hang` spaces (a longer word stands on a line of its own); ends with a newline.
void FillHelpLines(std::string_view lead, std::string_view text, size_t hang, std::string* out) {
  *out += lead;
  size_t column = lead.size();
  bool line_has_word = false;
  for (size_t at = 0; at < text.size();) {
    const size_t space = std::min(text.find(' ', at), text.size());
    const std::string_view word = text.substr(at, space - at);
    at = space + 1;
    if (word.empty()) continue;
    if (line_has_word && column + 1 + word.size() > kHelpWidth) {
      *out += '\n';
      out->append(hang, ' ');
      column = hang;
      line_has_word = false;
    }
    if (line_has_word) {
      *out += ' ';
      ++column;
    }
    *out += word;
    column += word.size();
    line_has_word = true;
  }
  *out += '\n';
}

// Where an indented line's description begins: after its first gap of two spaces or more past
// its indent; its indent when it has none.
size_t DescriptionColumn(std::string_view line, size_t indent) {
  const size_t gap = line.find("  ", indent);
  if (gap == std::string_view::npos) return indent;
  const size_t text = line.find_first_not_of(' ', gap);
  return text == std::string_view::npos ? indent : text;
}

}  // namespace

std::string FitHelp(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  const bool ends_with_newline = !text.empty() && text.back() == '\n';
  if (ends_with_newline) lines.pop_back();  // the empty piece after the last newline
  auto too_long = [&lines](size_t from, size_t to) {
    for (size_t k = from; k < to; ++k) {
      if (lines[k].size() > kHelpWidth) return true;
    }
    return false;
  };
  std::string out;
  for (size_t i = 0; i < lines.size();) {
    const std::string_view line = lines[i];
    const size_t indent = std::min(line.find_first_not_of(' '), line.size());
    if (indent == line.size()) {  // blank
      out += line;
      out += '\n';
      ++i;
      continue;
    }
    size_t hang = 0;
    size_t end = i + 1;
    std::string_view lead;
    if (indent == 0) {
      while (end < lines.size() && !lines[end].empty() && lines[end][0] != ' ') ++end;
    } else {
      hang = DescriptionColumn(line, indent);
      lead = line.substr(0, hang);
      // Its continuation lines: indented exactly under its description.
      while (hang > indent && end < lines.size() && lines[end].size() > hang &&
             lines[end].find_first_not_of(' ') == hang) {
        ++end;
      }
    }
    if (!too_long(i, end)) {
      for (size_t k = i; k < end; ++k) {
        out += lines[k];
        out += '\n';
      }
    } else {
      std::string words(line.substr(lead.size()));
      for (size_t k = i + 1; k < end; ++k) {
        words += ' ';
        words += lines[k].substr(hang);
      }
      FillHelpLines(lead, words, hang, &out);
    }
    i = end;
  }
  if (!ends_with_newline && !out.empty()) out.pop_back();
  return out;
}

absl::Status ParseUint32Flag(const std::string& option, const std::string& value, uint32_t* out) {
  if (!absl::SimpleAtoi(value, out)) {
    return Usage(absl::StrFormat("%s: '%s' is not a non-negative integer", option, value));
  }
  return absl::OkStatus();
}

absl::Status ParseSecondsFlag(const std::string& option, const std::string& value, double* out) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v) || v < 0) {
    return Usage(absl::StrFormat("%s: '%s' is not a number of seconds", option, value));
  }
  *out = v;
  return absl::OkStatus();
}

}  // namespace iotrace
