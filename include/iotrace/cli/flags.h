// A small command-line parser for the subcommands: long options (--name VALUE, --name=VALUE),
// short ones (-n VALUE, -nVALUE), flags, repeatable options (the handler runs for each), and
// everything after "--".
#ifndef IOTRACE_CLI_FLAGS_H_
#define IOTRACE_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace iotrace {

class FlagParser {
 public:
  // How a command line is read. kGetopt (record, list, doctor, reset): getopt_long's conventions
  // (-nVALUE, --name=VALUE, "--" ends the options, "-" is an argument; no abbreviations).
  // kExactWords (report, whose spellings and messages predate this parser and are pinned by
  // tests): an option is one of the words added, its value the next argument or, for a long
  // option, after '=' ("-nVALUE", "-" and "--" are unknown options); a value may not be empty; a
  // switch ignores "=VALUE"; an unknown option is named as typed, "=VALUE" included.
  enum class Syntax { kGetopt, kExactWords };

  // `usage_hint` goes with every usage error the parser itself finds.
  explicit FlagParser(Syntax syntax = Syntax::kGetopt,
                      std::string usage_hint = "see --help for the options");

  // `handler` gets the value ("" for a flag without value). Returning an error stops parsing.
  using Handler = std::function<absl::Status(const std::string& value)>;

  // short_name may be 0. takes_value false = a switch.
  void Add(std::string long_name, char short_name, bool takes_value, std::string value_name,
           std::string help, Handler handler);

  // The common handlers: a switch that sets *on; an option whose value is kept in *value as
  // given.
  void AddSwitch(std::string long_name, char short_name, std::string help, bool* on);
  void AddString(std::string long_name, char short_name, std::string value_name, std::string help,
                 std::string* value);

  // A long option whose value may be left out (getopt's optional argument), as perf's
  // --switch-output: "--name=VALUE", or "--name VALUE" when `takes_next` accepts the next
  // argument, else the handler gets "". Help shows "--name[=VALUE_NAME]".
  void AddOptionalValue(std::string long_name, std::string value_name, std::string help,
                        std::function<bool(const std::string&)> takes_next, Handler handler);

  // Positional arguments go to `handler` one by one as they come (it may refuse one, before the
  // arguments after it are read) instead of to Parse's *positional.
  void SetArgumentHandler(Handler handler);

  // Parses args (without the command name). Positional arguments (those not starting with '-')
  // go to *positional; everything after "--" to *rest. Every error is a usage error
  // (IsUsageError), the parser's own InvalidArgument with the usage hint.
  absl::Status Parse(const std::vector<std::string>& args, std::vector<std::string>* positional,
                     std::vector<std::string>* rest) const;

  // The options block of --help.
  std::string Help() const;

 private:
  struct Option {
    std::string long_name;
    char short_name;
    bool takes_value;
    std::string value_name;
    std::string help;
    Handler handler;
    std::function<bool(const std::string&)> takes_next;  // set: the value is optional
  };
  const Option* FindLong(const std::string& name) const;
  const Option* FindShort(char c) const;
  absl::Status Error(const std::string& message) const;
  Syntax syntax_;
  std::string usage_hint_;
  std::vector<Option> options_;
  Handler argument_handler_;
};

// --help's text fitted to 80 columns. Prose (lines that begin in the first column, up to a blank
// or an indented line) is filled anew where a line of it is too long. An indented line too long
// is wrapped with the lines after it that continue it under its description (the text after
// its first gap of two spaces or more), the wrapped lines there too. What fits stays as it is.
std::string FitHelp(std::string_view text);

// Value parsers with messages that name the option.
absl::Status ParseUint32Flag(const std::string& option, const std::string& value, uint32_t* out);
absl::Status ParseSecondsFlag(const std::string& option, const std::string& value, double* out);

}  // namespace iotrace

#endif  // IOTRACE_CLI_FLAGS_H_
