// The causes a failed call of the soak may legitimately give, each recognised by its code name
// and a telling part of its message. A rank's error that matches no row, or comes with an
// empty message, is a failure of the soak: either a fault the chaos did not inject or an error
// that does not say what went wrong.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ohio::soak {

struct ErrorCause {
  std::string name;          // how the figures count it
  std::string code_name;     // ohio_strerror() of the code
  std::vector<std::string> message_parts;  // parts of the message that name the cause, all there
  std::string fault;         // which injected fault explains it
  bool after_kill_only = false;  // a timeout: expected only in a run that lost a rank to the chaos
  bool after_stop_only = false;  // expected only in a run that met a daemon the chaos stopped
};

const std::vector<ErrorCause>& ExpectedCauses();

// The first cause matching one error, or nullptr.
const ErrorCause* CauseOf(const std::string& code_name, const std::string& message);

}  // namespace ohio::soak
