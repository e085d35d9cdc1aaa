// redis_client.h -- a small synchronous Redis client over hiredis.
//
// One RedisClient is one connection, used by one thread at a time (it is not
// thread-safe; each thread of a daemon owns its own). Connection details come
// from a URL, redis://[user[:password]@]host[:port][/db], where user and
// password may be percent-encoded; a password-only URL
// (redis://:secret@host) uses the legacy AUTH form, a user selects a Redis 6
// ACL user.
//
// Failure contract. Every failure is a RedisError whose kind() says what
// failed: kConnection (could not connect, or the connection broke mid
// command: the command may or may not have run), kAuth (AUTH/SELECT
// refused), kReply (the server answered with an error reply, e.g. WRONGTYPE
// or a Lua error; the connection is still good), kProtocol (an unexpected
// reply shape). After a kConnection error the next command reconnects first
// (with the configured timeout); command() never re-sends a command by itself,
// because most of ours are not idempotent. Callers that know a command is
// idempotent use retry().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace zkfarm {

class RedisError : public std::runtime_error {
 public:
  enum class Kind { kConnection, kAuth, kReply, kProtocol };
  RedisError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

struct RedisUrl {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string user;      // empty: default user
  std::string password;  // empty: no AUTH
  int db = 0;

  // Parses a redis:// URL. Throws std::invalid_argument naming what is wrong.
  static RedisUrl parse(const std::string& url);
  // The URL with the password replaced by "***" (safe for logs).
  std::string redacted() const;
};

// A reply, converted out of hiredis's structures.
struct RedisReply {
  enum class Type { kNil, kString, kInteger, kArray, kStatus };
  Type type = Type::kNil;
  std::string str;           // kString, kStatus
  long long integer = 0;     // kInteger
  std::vector<RedisReply> elements;  // kArray

  bool is_nil() const { return type == Type::kNil; }
  // The string payload; throws RedisError(kProtocol) unless a string/status.
  const std::string& as_string() const;
  // The integer payload; throws RedisError(kProtocol) unless an integer.
  long long as_integer() const;
  // Array elements; throws RedisError(kProtocol) unless an array (nil gives {}).
  const std::vector<RedisReply>& as_array() const;
};

class RedisClient {
 public:
  struct Options {
    std::chrono::milliseconds connect_timeout{2000};
    // Read/write timeout for ordinary commands (blocking commands add their
    // own block time on top).
    std::chrono::milliseconds command_timeout{5000};
  };

  // Connects (and authenticates, selects the db) lazily on first use, so a
  // daemon can start before Redis does. Throws std::invalid_argument on a bad
  // URL.
  explicit RedisClient(const std::string& url);
  RedisClient(const std::string& url, Options options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Runs one command; returns its reply. Throws RedisError as described above.
  RedisReply command(const std::vector<std::string>& args);
  RedisReply command(std::initializer_list<std::string_view> args);
  // A blocking command (BLMOVE, BLPOP, ...) that may block up to block_for.
  RedisReply blocking_command(const std::vector<std::string>& args,
                              std::chrono::milliseconds block_for);

  // Runs a Lua script by SHA (EVALSHA), loading it on NOSCRIPT. keys and
  // args as in EVAL. Throws as command().
  RedisReply eval(const std::string& script, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args);

  // Sends commands in one write and reads their replies (one round trip);
  // returns one reply per command, in order. Not atomic (see transaction()).
  // Throws as command(): after reading every reply, the first error reply
  // (kReply), or kConnection when the connection fails (then some commands
  // may have run).
  std::vector<RedisReply> pipeline(const std::vector<std::vector<std::string>>& commands);
  // Runs commands as one MULTI/EXEC transaction, in one round trip; returns
  // the EXEC reply array. Throws as command() (kReply if EXEC aborted).
  RedisReply transaction(const std::vector<std::vector<std::string>>& commands);

  // Calls fn until it returns without a kConnection error, at most attempts
  // times, sleeping backoff (doubling, capped at 2 s) between tries. For
  // idempotent operations only.
  template <class F>
  auto retry(F&& fn, int attempts = 5,
             std::chrono::milliseconds backoff = std::chrono::milliseconds(100)) -> decltype(fn());

  // Connects now if not connected. Throws RedisError.
  void ensure_connected();
  bool connected() const { return context_ != nullptr; }
  const RedisUrl& url() const { return url_; }

 private:
  RedisReply run(const std::vector<std::string>& args, std::chrono::milliseconds timeout);
  void disconnect();

  RedisUrl url_;
  Options options_;
  redisContext* context_ = nullptr;
};

void sleep_for_backoff(std::chrono::milliseconds d);

template <class F>
auto RedisClient::retry(F&& fn, int attempts, std::chrono::milliseconds backoff) -> decltype(fn()) {
  for (int i = 1;; ++i) {
    try {
      return fn();
    } catch (const RedisError& e) {
      if (e.kind() != RedisError::Kind::kConnection || i >= attempts) throw;
    }
    sleep_for_backoff(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

}  // namespace zkfarm
