// A small command-line parser for the subcommands: long options (--name VALUE, --name=VALUE),
// short ones (-n VALUE, -nVALUE), flags, repeatable options, and everything after "--".
#ifndef IOTRACE_CLI_FLAGS_H_
#define IOTRACE_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace iotrace {

class FlagParser {
 public:
  // `handler` gets the value ("" for a flag without value). Returning an error stops parsing.
  using Handler = std::function<absl::Status(const std::string& value)>;

  // short_name may be 0. takes_value false = a switch.
  void Add(std::string long_name, char short_name, bool takes_value, std::string value_name,
           std::string help, Handler handler);

  // Parses args (without the command name). Positional arguments (those not starting with '-')
  // go to *positional; everything after "--" to *rest. Usage errors are InvalidArgument with a
  // hint pointing at --help.
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
  };
  const Option* FindLong(const std::string& name) const;
  const Option* FindShort(char c) const;
  std::vector<Option> options_;
};

// Value parsers with messages that name the option.
absl::Status ParseUint32Flag(const std::string& option, const std::string& value, uint32_t* out);
absl::Status ParseSecondsFlag(const std::string& option, const std::string& value, double* out);

}  // namespace iotrace

#endif  // IOTRACE_CLI_FLAGS_H_
