// redis_client.cc -- see redis_client.h.
#include "cluster/redis_client.h"

#include <hiredis/hiredis.h>

#include <cstring>
#include <optional>
#include <thread>

#include "base/digest.h"

namespace zkfarm {
namespace {

std::string percent_decode(std::string_view s, const std::string& what) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      auto hex = [&](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        throw std::invalid_argument("bad percent-encoding in the Redis URL's " + what);
      };
      if (i + 2 >= s.size()) throw std::invalid_argument("bad percent-encoding in the Redis URL's " + what);
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

int parse_int(std::string_view s, int lo, int hi, const std::string& what) {
  if (s.empty() || s.size() > 9) throw std::invalid_argument("Redis URL: bad " + what + " '" + std::string(s) + "'");
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') throw std::invalid_argument("Redis URL: bad " + what + " '" + std::string(s) + "'");
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi)
    throw std::invalid_argument("Redis URL: " + what + " " + std::to_string(v) + " is out of range");
  return v;
}

RedisReply convert(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    case REDIS_REPLY_NIL:
    default:
      out.type = RedisReply::Type::kNil;
      break;
  }
  return out;
}

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<long>(ms.count() / 1000);
  tv.tv_usec = static_cast<long>((ms.count() % 1000) * 1000);
  return tv;
}

// True if an error reply (converted to kReply) carries a nested error inside
// an EXEC array (hiredis gives REDIS_REPLY_ERROR elements).
void throw_nested_errors(const redisReply* r) {
  if (r->type == REDIS_REPLY_ERROR)
    throw RedisError(RedisError::Kind::kReply, std::string(r->str, r->len));
  if (r->type == REDIS_REPLY_ARRAY)
    for (std::size_t i = 0; i < r->elements; ++i) throw_nested_errors(r->element[i]);
}

}  // namespace

RedisUrl RedisUrl::parse(const std::string& url) {
  RedisUrl out;
  const std::string scheme = "redis://";
  if (url.rfind(scheme, 0) != 0)
    throw std::invalid_argument(
        "bad Redis URL (not printed: it may hold a password): expected "
        "redis://[user[:password]@]host[:port][/db]");
  std::string_view rest(url);
  rest.remove_prefix(scheme.size());
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest.remove_prefix(at + 1);
    if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
      out.user = percent_decode(userinfo.substr(0, colon), "user");
      out.password = percent_decode(userinfo.substr(colon + 1), "password");
    } else {
      out.user = percent_decode(userinfo, "user");
    }
  }
  std::string_view hostport = rest;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) out.db = parse_int(db, 0, 1 << 20, "database number");
  }
  if (auto colon = hostport.rfind(':'); colon != std::string_view::npos) {
    out.port = parse_int(hostport.substr(colon + 1), 1, 65535, "port");
    hostport = hostport.substr(0, colon);
  }
  if (hostport.empty()) throw std::invalid_argument("Redis URL has no host");
  out.host = std::string(hostport);
  return out;
}

std::string RedisUrl::redacted() const {
  std::string s = "redis://";
  if (!user.empty() || !password.empty()) {
    s += user;
    if (!password.empty()) s += ":***";
    s += "@";
  }
  s += host + ":" + std::to_string(port);
  if (db != 0) s += "/" + std::to_string(db);
  return s;
}

const std::string& RedisReply::as_string() const {
  if (type != Type::kString && type != Type::kStatus)
    throw RedisError(RedisError::Kind::kProtocol, "expected a string reply");
  return str;
}

long long RedisReply::as_integer() const {
  if (type != Type::kInteger) throw RedisError(RedisError::Kind::kProtocol, "expected an integer reply");
  return integer;
}

const std::vector<RedisReply>& RedisReply::as_array() const {
  if (type != Type::kArray && type != Type::kNil)
    throw RedisError(RedisError::Kind::kProtocol, "expected an array reply");
  return elements;
}

RedisClient::RedisClient(const std::string& url) : RedisClient(url, Options{}) {}

RedisClient::RedisClient(const std::string& url, Options options)
    : url_(RedisUrl::parse(url)), options_(options) {}

RedisClient::~RedisClient() { disconnect(); }

void RedisClient::disconnect() {
  if (context_) redisFree(context_);
  context_ = nullptr;
}

void RedisClient::ensure_connected() {
  if (context_) return;
  redisContext* c = redisConnectWithTimeout(url_.host.c_str(), url_.port,
                                            to_timeval(options_.connect_timeout));
  if (c == nullptr)
    throw RedisError(RedisError::Kind::kConnection,
                     "cannot connect to " + url_.redacted() + ": out of memory");
  if (c->err) {
    std::string message = "cannot connect to " + url_.redacted() + ": " + c->errstr;
    redisFree(c);
    throw RedisError(RedisError::Kind::kConnection, message);
  }
  context_ = c;
  auto setup = [&](const std::vector<std::string>& args, const std::string& what) {
    try {
      run(args, options_.command_timeout);
    } catch (const RedisError& e) {
      disconnect();
      if (e.kind() == RedisError::Kind::kReply)
        throw RedisError(RedisError::Kind::kAuth, what + " on " + url_.redacted() + " failed: " + e.what());
      throw;
    }
  };
  if (!url_.password.empty()) {
    if (url_.user.empty())
      setup({"AUTH", url_.password}, "AUTH");
    else
      setup({"AUTH", url_.user, url_.password}, "AUTH");
  } else if (!url_.user.empty()) {
    throw RedisError(RedisError::Kind::kAuth, "Redis URL names user '" + url_.user + "' but no password");
  }
  if (url_.db != 0) setup({"SELECT", std::to_string(url_.db)}, "SELECT");
}

RedisReply RedisClient::run(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<const char*> argv;
  std::vector<std::size_t> argvlen;
  argv.reserve(args.size());
  argvlen.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    argvlen.push_back(a.size());
  }
  redisSetTimeout(context_, to_timeval(timeout));
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context_, static_cast<int>(args.size()), argv.data(), argvlen.data()));
  if (reply == nullptr) {
    std::string message = std::string("connection to ") + url_.redacted() + " lost during " +
                          (args.empty() ? "" : args[0]) + ": " + context_->errstr;
    disconnect();
    throw RedisError(RedisError::Kind::kConnection, message);
  }
  struct Free {
    redisReply* r;
    ~Free() { freeReplyObject(r); }
  } free_reply{reply};
  if (reply->type == REDIS_REPLY_ERROR)
    throw RedisError(RedisError::Kind::kReply, std::string(reply->str, reply->len));
  throw_nested_errors(reply);
  return convert(reply);
}

RedisReply RedisClient::command(const std::vector<std::string>& args) {
  ensure_connected();
  return run(args, options_.command_timeout);
}

RedisReply RedisClient::command(std::initializer_list<std::string_view> args) {
  std::vector<std::string> v;
  v.reserve(args.size());
  for (auto a : args) v.emplace_back(a);
  return command(v);
}

RedisReply RedisClient::blocking_command(const std::vector<std::string>& args,
                                         std::chrono::milliseconds block_for) {
  ensure_connected();
  return run(args, options_.command_timeout + block_for);
}

RedisReply RedisClient::eval(const std::string& script, const std::vector<std::string>& keys,
                             const std::vector<std::string>& args) {
  const std::string sha = sha1_hex(script);
  std::vector<std::string> argv = {"EVALSHA", sha, std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  try {
    return command(argv);
  } catch (const RedisError& e) {
    if (e.kind() != RedisError::Kind::kReply || std::string(e.what()).rfind("NOSCRIPT", 0) != 0) throw;
  }
  argv[0] = "EVAL";
  argv[1] = script;
  return command(argv);
}

std::vector<RedisReply> RedisClient::pipeline(const std::vector<std::vector<std::string>>& commands) {
  ensure_connected();
  if (commands.empty()) return {};
  redisSetTimeout(context_, to_timeval(options_.command_timeout));
  std::vector<const char*> argv;
  std::vector<std::size_t> argvlen;
  for (const auto& args : commands) {
    argv.clear();
    argvlen.clear();
    for (const auto& a : args) {
      argv.push_back(a.data());
      argvlen.push_back(a.size());
    }
    if (redisAppendCommandArgv(context_, static_cast<int>(args.size()), argv.data(), argvlen.data()) != REDIS_OK) {
      std::string message = "cannot queue " + (args.empty() ? std::string() : args[0]) + " for " + url_.redacted() +
                            ": " + context_->errstr;
      disconnect();
      throw RedisError(RedisError::Kind::kConnection, message);
    }
  }
  // Every reply is read before any error is thrown, so the connection stays
  // in step with the commands sent.
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  std::optional<RedisError> first_error;
  for (const auto& args : commands) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
      std::string message = std::string("connection to ") + url_.redacted() + " lost during " +
                            (args.empty() ? "" : args[0]) + ": " + context_->errstr;
      disconnect();
      throw RedisError(RedisError::Kind::kConnection, message);
    }
    auto* reply = static_cast<redisReply*>(raw);
    struct Free {
      redisReply* r;
      ~Free() { freeReplyObject(r); }
    } free_reply{reply};
    try {
      throw_nested_errors(reply);
    } catch (const RedisError& e) {
      if (!first_error) first_error = e;
      replies.emplace_back();
      continue;
    }
    replies.push_back(convert(reply));
  }
  if (first_error) throw *first_error;
  return replies;
}

RedisReply RedisClient::transaction(const std::vector<std::vector<std::string>>& commands) {
  // MULTI, the commands and EXEC go out in one write and come back in one
  // read: one round trip whatever the number of commands. A command Redis
  // refuses while queueing aborts the EXEC (EXECABORT); the first error is
  // what is thrown.
  std::vector<std::vector<std::string>> all;
  all.reserve(commands.size() + 2);
  all.push_back({"MULTI"});
  all.insert(all.end(), commands.begin(), commands.end());
  all.push_back({"EXEC"});
  std::vector<RedisReply> replies = pipeline(all);
  RedisReply reply = std::move(replies.back());
  if (reply.is_nil()) throw RedisError(RedisError::Kind::kReply, "transaction aborted");
  return reply;
}

void sleep_for_backoff(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

}  // namespace zkfarm
