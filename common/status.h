// Errors as values: a code a program can branch on and a message a person can act on.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ohio {

// Shared by the daemon and the client library; the C API maps these one to one onto
// OHIO_ERR_* (client/libohio/ohio.h), so the numbers must not change.
enum class Code : int {
  kOk = 0,
  kInvalidArgument = 1,  // the caller's arguments are wrong
  kNoDaemon = 2,         // no ohiod answers on the socket
  kProtocol = 3,         // the other side spoke something unexpected
  kRefused = 4,          // the daemon refused a request (permission, mismatch)
  kNoMemory = 5,         // the group does not fit in the configured memory
  kSizeMismatch = 6,     // ranks disagree on the bytes per rank
  kGroupFailed = 7,      // a rank of the group died or left; the group is closed
  kTimeout = 8,          // the group did not complete within the timeout
  kDaemonLost = 9,       // the connection to ohiod broke
  kSystem = 10,          // a system call failed
  kNotSupported = 11,
  kOptedOut = 12,         // a rank opted out of this call; nothing moved; the group is fine
};

const char* CodeName(Code code);

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Status carrying errno's text: "what: strerror(errno)".
Status SystemError(const std::string& what, int err);

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ohio
