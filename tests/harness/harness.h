// harness.h -- real parts for cluster tests: temp dirs, free loopback ports,
// child processes, and a private redis-server.
//
// Everything a test starts it also stops: Process kills its child (SIGKILL)
// in the destructor if it is still running, RedisServer shuts its server
// down, TempDir removes its tree. Tests only talk to 127.0.0.1.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zkfarm::testing {

class TempDir {
 public:
  TempDir();   // under $TEST_TMPDIR (or /tmp)
  ~TempDir();  // rm -r
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to 0, read, close).
int free_port();

// Waits up to timeout until something accepts TCP connections on
// 127.0.0.1:port; true when it does.
bool wait_for_listener(int port, std::chrono::milliseconds timeout);

// The result of http_request: status 0 when no connection was made.
struct HttpResult {
  int status = 0;
  std::string headers, body;  // headers without the blank line; body de-chunked
};

// One HTTP/1.1 request to 127.0.0.1:port with "Connection: close";
// `extra_headers` are full lines ("Name: value\r\n"). A body (or any POST)
// is sent as application/json. Reads until the body is complete
// (Content-Length or the last chunk) or EOF, at most 120 s per read.
HttpResult http_request(int port, const std::string& method, const std::string& path, const std::string& body = "",
                        const std::string& extra_headers = "");

// Path of a file in the test's runfiles ("coordinator/zkfarm-coordinator").
std::string runfile(const std::string& workspace_relative);

class Process {
 public:
  // Starts argv[0] with argv; stdout and stderr go to log_path. extra_env
  // entries override the inherited environment.
  Process(std::vector<std::string> argv, std::string log_path,
          std::map<std::string, std::string> extra_env = {});
  ~Process();  // SIGKILL + reap if still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig);
  // Waits up to timeout for exit. Returns the wait status, or nullopt.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  bool running();
  const std::string& log_path() const { return log_path_; }
  std::string log() const;  // the log file's contents

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string log_path_;
};

class RedisServer {
 public:
  struct Options {
    bool appendonly = false;
    std::string password;  // requirepass when non-empty
    // "always" (tests: an acknowledged write survives a SIGKILL) or
    // "everysec" (what deploy/ runs in production).
    std::string appendfsync = "always";
    // --aclfile when non-empty (the users of deploy/users.acl, say); the
    // server must be able to write it for ACL SAVE.
    std::string aclfile;
  };
  // Starts redis-server on a free port in dir and waits until it answers.
  // Throws std::runtime_error (with the server log) if it does not come up.
  RedisServer(const std::string& dir, Options options);
  explicit RedisServer(const std::string& dir) : RedisServer(dir, Options{}) {}
  ~RedisServer();
  int port() const { return port_; }
  std::string url() const;
  // SIGKILL the server (simulates a crash), then start it again on the same
  // port and dir (with AOF it recovers its data).
  void crash_and_restart();

 private:
  void start();
  std::string dir_;
  Options options_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
};

// A static HTTP server on 127.0.0.1 serving `dir`: Debian's
// /usr/bin/python3 -m http.server (GET and HEAD, no Range), or with `script`
// a Python server script run as `script PORT --directory DIR EXTRA...`
// (tests/cluster/range_http_server.py honours Range, can cut transfers and
// logs every request). Waits until it accepts connections; throws
// std::runtime_error (with its log) otherwise.
class HttpServer {
 public:
  HttpServer(const std::string& dir, const std::string& log_path, const std::string& script = "",
             const std::vector<std::string>& extra = {});
  ~HttpServer();
  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:<port>/"
  std::string log() const { return process_->log(); }

 private:
  int port_ = 0;
  std::unique_ptr<Process> process_;
};

// The outcome of a command run to completion.
struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal or by the timeout
  std::string out, err;
};
// Runs argv to completion with stdout and stderr captured separately (stdin
// from stdin_path, /dev/null when empty); SIGKILLs it after timeout.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& scratch_dir,
                          std::map<std::string, std::string> extra_env = {},
                          std::chrono::milliseconds timeout = std::chrono::seconds(120),
                          const std::string& stdin_path = "");

// redis-server on the users of deploy/users.acl, copied into dir first
// (Redis rewrites its aclfile at ACL SAVE); the test lists
// //deploy:users.acl among its data. Throws like RedisServer.
std::unique_ptr<RedisServer> start_redis_with_shipped_users(const TempDir& dir);
// The URL of deploy/users.acl's user `user` (e.g. "zkfarm-admin",
// "zkfarm-worker") on server, with the password the file gives it.
// std::invalid_argument when the file has no such user or no password.
std::string shipped_user_url(const RedisServer& server, const std::string& user);

// Polls pred every 20 ms until it returns true or timeout passes.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

// Reads a whole file (empty if missing).
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace zkfarm::testing
