// witness_generator.cc -- see witness_generator.h (its top comment says what the
// sandbox does and why it uses the kernel interfaces, not bubblewrap).
#include "witgen/witness_generator.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "base/sealed_copy.h"

namespace zkfarm::witgen {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// circom's runtime files; <name>.cpp and <name>.dat come on top.
constexpr const char* kRuntimeFiles[] = {"main.cpp", "calcwit.cpp", "calcwit.hpp", "circom.hpp",
                                         "fr.cpp",   "fr.hpp",      "fr.asm"};

// Our probe: linked against the generator's objects instead of circom's
// main, it prints what check_generator() needs.
constexpr const char* kProbeSource = R"(// zkfarm_probe.cpp -- written by zkfarm: reports the generator's field and sizes.
#include <gmp.h>
#include <cstdio>
#include <vector>
#include "circom.hpp"
#include "fr.hpp"
int main(int argc, char** argv) {
  mpz_t prime;
  mpz_init(prime);
  mpz_import(prime, Fr_N64, -1, 8, 0, 0, Fr_rawq);
  char* text = mpz_get_str(nullptr, 10, prime);
  std::printf("prime %s\nwitness %u\ninput_start %u\ninput_count %u\n", text, get_size_of_witness(),
              get_main_input_signal_start(), get_main_input_signal_no());
  if (argc < 2) return 0;
  // The .dat starts with the input hash map, then the witness-to-signal
  // list (as circom's main.cpp loads it).
  FILE* dat = std::fopen(argv[1], "rb");
  if (!dat) { std::fprintf(stderr, "cannot open %s\n", argv[1]); return 1; }
  const unsigned entries = get_size_of_input_hashmap();
  std::vector<HashSignalInfo> inputs(entries);
  if (entries && std::fread(inputs.data(), sizeof(HashSignalInfo), entries, dat) != entries) {
    std::fprintf(stderr, "%s is shorter than its input hash map\n", argv[1]);
    return 1;
  }
  unsigned lead = get_main_input_signal_start() + get_main_input_signal_no();
  if (lead > get_size_of_witness()) lead = get_size_of_witness();
  std::vector<u64> signals(lead);
  if (lead && std::fread(signals.data(), sizeof(u64), lead, dat) != lead) {
    std::fprintf(stderr, "%s is shorter than its witness-to-signal list\n", argv[1]);
    return 1;
  }
  for (const HashSignalInfo& e : inputs)
    if (e.hash || e.signalsize)
      std::printf("input %llx %llu %llu\n", (unsigned long long)e.hash, (unsigned long long)e.signalid,
                  (unsigned long long)e.signalsize);
  std::printf("witness_signals %u", lead);
  for (u64 s : signals) std::printf(" %llu", (unsigned long long)s);
  std::printf("\n");
  return 0;
}
)";

constexpr std::string_view kBn254Prime =
    "21888242871839275222246405745257275088548364400416034343698204186575808495617";
constexpr std::string_view kBls12381Prime =
    "52435875175126190479447740508185965837690552500527637822603658699938581184513";

struct ChildResult {
  bool exited = false;
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  bool sandbox_failed = false;  // the sandbox's init could not set it up (output says why)
  std::string output;  // stdout + stderr, at most kMaxCaptured bytes
};

// Each run's namespaces: its own users (the worker's uid is the only one
// mapped), mounts, PIDs, IPC, network (loopback only, down) and host name.
constexpr unsigned long kSandboxNamespaces =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS;
// The uid and gid the generator has inside: not 0, so execve leaves it no
// capabilities in its namespace.
constexpr unsigned kSandboxUid = 1000;
// The exit status of a sandbox that could not be set up (its message on
// stderr begins "zkfarm sandbox: ").
constexpr int kSandboxSetupFailed = 125;
constexpr const char* kSandboxHint =
    " (the worker needs user namespaces: see docs/OPERATIONS.md, \"Witness generators\"; "
    "--witgen-sandbox=off runs generators with rlimits only)";

constexpr std::size_t kMaxCaptured = 64u << 10;

// A bind mount or symlink of the sandbox's root, prepared before the clone
// (the child may not allocate).
struct MountStep {
  // kMakeDirectory: an empty directory of the new root, nothing bound on it.
  enum Kind { kDirectory, kFile, kLink, kMakeDirectory } kind = kDirectory;
  std::string source;       // host path (kLink: the link's text)
  std::string target;       // absolute path under the new root's mount point
  unsigned long flags = 0;  // the bind's remount flags (MS_RDONLY, MS_NOEXEC, ...)
};

// Everything the sandbox's init needs, built in the parent.
struct SandboxPlan {
  std::string root;       // an empty directory: the new root's mount point
  std::vector<MountStep> steps;
  std::string uid_map, gid_map;
  std::string workdir;    // inside: the run directory
  const sock_fprog* filter = nullptr;
};

struct ChildSetup {
  std::string directory;  // chdir here ("" = stay; with a sandbox: ignored)
  // Executed with execveat(exec_fd, "", AT_EMPTY_PATH) instead of opening
  // argv[0] (-1: execve(argv[0])): a generator runs from its sealed copy.
  int exec_fd = -1;
  const RunLimits* limits = nullptr;
  const SandboxPlan* sandbox = nullptr;  // namespaces, seccomp, empty environment
  bool empty_environment = false;
};

// The children run_child() waits for: the orphan reaper leaves them alone.
std::mutex g_children_mutex;
std::set<pid_t> g_children;
std::atomic<bool> g_subreaper{false};

// Reaps zombie children of this process that nobody waits for: descendants
// of a run reparented to us as subreaper (become_subreaper()).
void reap_orphans() {
  if (!g_subreaper.load()) return;
  const pid_t self = ::getpid();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces and parentheses.
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    pid_t ppid = 0;
    if (!(rest >> state >> ppid) || ppid != self || state != 'Z') continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    std::lock_guard<std::mutex> lock(g_children_mutex);
    if (!g_children.count(pid)) ::waitpid(pid, nullptr, WNOHANG);
  }
}

// Async-signal-safe: "<what> failed: errno <n>\n" to fd 2, then _exit.
[[noreturn]] void sandbox_fail(const char* what) {
  const int err = errno;
  char digits[16];
  int n = 0;
  unsigned value = static_cast<unsigned>(err);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value && n < 15);
  static const char kPrefix[] = "zkfarm sandbox: ";
  (void)!::write(2, kPrefix, sizeof kPrefix - 1);
  (void)!::write(2, what, std::strlen(what));
  static const char kMiddle[] = " failed: errno ";
  (void)!::write(2, kMiddle, sizeof kMiddle - 1);
  while (n) (void)!::write(2, &digits[--n], 1);
  (void)!::write(2, "\n", 1);
  ::_exit(kSandboxSetupFailed);
}

void write_proc_file(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) sandbox_fail(path);
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) sandbox_fail(path);
  ::close(fd);
}

// Resets what a child inherits from the worker: the blocked termination
// signals (the link thread reads them from a signalfd) and every signal
// disposition (an ignored SIGPIPE would survive exec).
void reset_signals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
}

// The sandbox's init (PID 1 of its PID namespace, root of its new user
// namespace, nothing else in it yet): maps its user, builds the new root,
// forks the generator and reports its wait status on status_fd. When init
// exits, the kernel kills everything left in the namespace.
// Executes argv from exec_fd (AT_EMPTY_PATH) when it is >= 0, else argv[0].
// Returns only on failure.
void exec_program(int exec_fd, char* const* argv, char* const* envp) {
  if (exec_fd >= 0)
    ::syscall(SYS_execveat, exec_fd, "", argv, envp, AT_EMPTY_PATH);
  else
    ::execve(argv[0], argv, envp);
}

[[noreturn]] void sandbox_init(const SandboxPlan& plan, int status_fd, int exec_fd, char* const* argv,
                               char* const* envp, const struct rlimit* limits) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  write_proc_file("/proc/self/setgroups", "deny");
  write_proc_file("/proc/self/uid_map", plan.uid_map);
  write_proc_file("/proc/self/gid_map", plan.gid_map);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) sandbox_fail("making / private");
  if (::mount("tmpfs", plan.root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") != 0)
    sandbox_fail("mounting the new root");
  for (const MountStep& step : plan.steps) {
    const char* target = step.target.c_str();
    if (step.kind == MountStep::kLink) {
      if (::symlink(step.source.c_str(), target) != 0) sandbox_fail(target);
      continue;
    }
    if (step.kind == MountStep::kMakeDirectory) {
      if (::mkdir(target, 0755) != 0) sandbox_fail(target);
      continue;
    }
    if (step.kind == MountStep::kDirectory) {
      if (::mkdir(target, 0755) != 0) sandbox_fail(target);
    } else {
      const int fd = ::open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0) sandbox_fail(target);
      ::close(fd);
    }
    if (::mount(step.source.c_str(), target, nullptr, MS_BIND, nullptr) != 0) sandbox_fail(target);
    if (::mount(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | step.flags, nullptr) != 0)
      sandbox_fail(target);
  }
  if (::mount(nullptr, plan.root.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
              nullptr) != 0)
    sandbox_fail("making the new root read-only");
  if (::chdir(plan.root.c_str()) != 0) sandbox_fail("entering the new root");
  if (::syscall(SYS_pivot_root, ".", ".") != 0) sandbox_fail("pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) sandbox_fail("detaching the host's root");
  if (::chdir(plan.workdir.c_str()) != 0) sandbox_fail("entering the run directory");
  const long generator = ::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (generator < 0) sandbox_fail("forking the generator");
  if (generator == 0) {
    ::close(status_fd);
    reset_signals();
    ::setrlimit(RLIMIT_CORE, &limits[0]);
    ::setrlimit(RLIMIT_CPU, &limits[1]);
    ::setrlimit(RLIMIT_AS, &limits[2]);
    ::setrlimit(RLIMIT_FSIZE, &limits[3]);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) sandbox_fail("no_new_privs");
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, plan.filter) != 0) sandbox_fail("loading the seccomp filter");
    exec_program(exec_fd, argv, envp);
    static const char kMessage[] = "exec failed\n";
    (void)!::write(2, kMessage, sizeof kMessage - 1);
    ::_exit(127);
  }
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, 0);
    if (done == generator) {
      (void)!::write(status_fd, &status, sizeof status);
      ::_exit(0);
    }
    if (done < 0 && errno != EINTR) sandbox_fail("waiting for the generator");
  }
}

// Runs argv[0] with argv (no shell, no PATH search unless argv[0] has no
// '/': then execvp), stdout+stderr captured. Without a sandbox: in its own
// process group, killed with it at `timeout`. With one: as described in
// the header, the namespace's init killed at `timeout`. Throws RunFailure
// when it cannot start.
ChildResult run_child(const std::vector<std::string>& args, const ChildSetup& setup,
                      std::chrono::milliseconds timeout) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* empty_env[] = {nullptr};
  char* const* envp = setup.empty_environment || setup.sandbox ? empty_env : environ;
  int pipe_fds[2], status_fds[2] = {-1, -1};
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw RunFailure(std::string("cannot create a pipe: ") + std::strerror(errno));
  if (setup.sandbox && ::pipe2(status_fds, O_CLOEXEC) != 0) {
    const int err = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw RunFailure(std::string("cannot create a pipe: ") + std::strerror(err));
  }
  const bool search_path = args[0].find('/') == std::string::npos;
  // core, CPU, address space, file size
  struct rlimit limits[4] = {{0, 0}, {RLIM_INFINITY, RLIM_INFINITY}, {RLIM_INFINITY, RLIM_INFINITY},
                             {RLIM_INFINITY, RLIM_INFINITY}};
  if (setup.limits) {
    limits[1] = {static_cast<rlim_t>(setup.limits->cpu_seconds), static_cast<rlim_t>(setup.limits->cpu_seconds + 1)};
    limits[2] = {static_cast<rlim_t>(setup.limits->memory_bytes), static_cast<rlim_t>(setup.limits->memory_bytes)};
    limits[3] = {static_cast<rlim_t>(setup.limits->output_bytes), static_cast<rlim_t>(setup.limits->output_bytes)};
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Above the descriptors the child sets up (0-4), so no dup2 clobbers it.
  const int exec_fd = setup.exec_fd >= 0 ? ::fcntl(setup.exec_fd, F_DUPFD_CLOEXEC, 10) : -1;
  if (setup.exec_fd >= 0 && exec_fd < 0) {
    const int err = errno;
    for (int fd : {pipe_fds[0], pipe_fds[1], status_fds[0], status_fds[1], null_fd})
      if (fd >= 0) ::close(fd);
    throw RunFailure(std::string("cannot duplicate the generator's descriptor: ") + std::strerror(err));
  }
  std::unique_lock<std::mutex> registry(g_children_mutex);
  const long spawned =
      setup.sandbox ? ::syscall(SYS_clone, kSandboxNamespaces | SIGCHLD, nullptr, nullptr, nullptr, nullptr)
                    : ::syscall(SYS_clone, SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (spawned < 0) {
    const int err = errno;
    registry.unlock();
    for (int fd : {pipe_fds[0], pipe_fds[1], status_fds[0], status_fds[1], null_fd, exec_fd})
      if (fd >= 0) ::close(fd);
    if (setup.sandbox)
      throw RunFailure(std::string("cannot create the witness generator sandbox (user, mount, PID, IPC and network "
                                   "namespaces): ") +
                       std::strerror(err) + kSandboxHint);
    throw RunFailure(std::string("fork failed: ") + std::strerror(err));
  }
  const pid_t pid = static_cast<pid_t>(spawned);
  if (pid == 0) {
    // Child: async-signal-safe calls only until execve (no allocation:
    // another thread of the worker may hold the allocator's lock).
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(pipe_fds[1], 1);
    ::dup2(pipe_fds[1], 2);
    // The program's sealed copy at the next descriptor, closed by its exec.
    const auto keep_exec_fd = [exec_fd](int at) {
      if (exec_fd < 0) return -1;
      ::dup2(exec_fd, at);
      ::fcntl(at, F_SETFD, FD_CLOEXEC);
      return at;
    };
    if (setup.sandbox) {
      ::dup2(status_fds[1], 3);
      const int program = keep_exec_fd(4);
      ::close_range(program < 0 ? 4 : 5, ~0u, 0);
      sandbox_init(*setup.sandbox, 3, program, argv.data(), envp, limits);
    }
    const int program = keep_exec_fd(3);
    ::close_range(program < 0 ? 3 : 4, ~0u, 0);
    ::setpgid(0, 0);
    if (!setup.directory.empty() && ::chdir(setup.directory.c_str()) != 0) ::_exit(126);
    reset_signals();
    ::setrlimit(RLIMIT_CORE, &limits[0]);
    if (setup.limits) {
      ::setrlimit(RLIMIT_CPU, &limits[1]);
      ::setrlimit(RLIMIT_AS, &limits[2]);
      ::setrlimit(RLIMIT_FSIZE, &limits[3]);
    }
    if (search_path && program < 0)
      ::execvpe(argv[0], argv.data(), envp);
    else
      exec_program(program, argv.data(), envp);
    static const char kMessage[] = "exec failed\n";
    (void)!::write(2, kMessage, sizeof kMessage - 1);
    ::_exit(127);
  }
  g_children.insert(pid);
  registry.unlock();
  if (null_fd >= 0) ::close(null_fd);
  if (exec_fd >= 0) ::close(exec_fd);
  ::close(pipe_fds[1]);
  if (setup.sandbox) ::close(status_fds[1]);
  else ::setpgid(pid, pid);  // also from here: no race with the child's own call
  // Without a sandbox, the group; with one, its init (the kernel kills the
  // rest of the PID namespace with it).
  const auto kill_all = [&] { setup.sandbox ? ::kill(pid, SIGKILL) : ::kill(-pid, SIGKILL); };
  ChildResult result;
  const auto deadline = Clock::now() + timeout;
  char buffer[4096];
  bool open = true;
  while (open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      kill_all();
      break;
    }
    struct pollfd p{pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      open = false;
      break;
    }
    if (result.output.size() < kMaxCaptured)
      result.output.append(buffer, std::min<std::size_t>(static_cast<std::size_t>(n), kMaxCaptured - result.output.size()));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  // The pipe closed (or we killed the group): the child is gone or going.
  // A child that closed its output but still runs is killed at the deadline.
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (Clock::now() >= deadline && !result.timed_out) {
      result.timed_out = true;
      kill_all();
    }
    ::usleep(2000);
  }
  if (!setup.sandbox) ::kill(-pid, SIGKILL);  // anything it left behind in its group
  {
    std::lock_guard<std::mutex> lock(g_children_mutex);
    g_children.erase(pid);
  }
  if (setup.sandbox) {
    // init's own status says only whether the sandbox came up; the
    // generator's is what init reported.
    int generator_status = 0;
    const ssize_t got = result.timed_out ? 0 : ::read(status_fds[0], &generator_status, sizeof generator_status);
    ::close(status_fds[0]);
    if (got == static_cast<ssize_t>(sizeof generator_status)) {
      status = generator_status;
    } else if (!result.timed_out) {
      result.sandbox_failed = true;
    }
  }
  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  reap_orphans();
  return result;
}

// The seccomp filter of every generator run, compiled once: everything is
// allowed but the calls below, which fail with EPERM (a generator that
// tries one sees an error, not a kill, so its message reaches the quoted
// output). Other ABIs (i386, x32) kill the process: libseccomp's default
// for architectures the filter does not name.
// Denied: debugging and reading other processes (ptrace, process_vm_*,
// kcmp), namespaces and mounts (unshare, setns, the new mount API, clone
// with a namespace flag; clone3 answers ENOSYS so glibc falls back to
// clone), the kernel's keyring, BPF, perf, io_uring (its operations bypass
// this filter), userfaultfd, kexec, modules, swap, reboot, accounting,
// quotas, the kernel log, file handles, iopl/ioperm, clock setting.
struct SeccompFilter {
  std::vector<sock_filter> program;
  sock_fprog fprog{};
  std::string error;  // why it could not be built ("" = built)
};

const SeccompFilter& seccomp_filter() {
  static const SeccompFilter filter = [] {
    SeccompFilter f;
    static const char* const kDenied[] = {
        "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "mount", "umount", "umount2", "pivot_root",
        "chroot", "unshare", "setns", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
        "mount_setattr", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "io_uring_setup",
        "io_uring_enter", "io_uring_register", "userfaultfd", "kexec_load", "kexec_file_load", "init_module",
        "finit_module", "delete_module", "swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd",
        "syslog", "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "lookup_dcookie", "settimeofday",
        "clock_settime", "clock_adjtime", "adjtimex", "vhangup", "nfsservctl"};
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
      f.error = "seccomp_init failed";
      return f;
    }
    int rc = 0;
    for (const char* name : kDenied) {
      const int nr = seccomp_syscall_resolve_name(name);
      if (nr == __NR_SCMP_ERROR) continue;  // not a call of this architecture
      if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0)) != 0) {
        f.error = std::string("seccomp_rule_add(") + name + "): " + std::strerror(-rc);
        break;
      }
    }
    for (const unsigned long flag : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWNET,
                                     CLONE_NEWUTS, CLONE_NEWCGROUP}) {
      if (rc) break;
      rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
      if (rc) f.error = std::string("seccomp_rule_add(clone): ") + std::strerror(-rc);
    }
    if (!rc && (rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) != 0)
      f.error = std::string("seccomp_rule_add(clone3): ") + std::strerror(-rc);
    // libseccomp 2.5 exports to a descriptor only: a memfd, read back.
    if (!rc) {
      const int fd = ::memfd_create("zkfarm-seccomp", MFD_CLOEXEC);
      if (fd < 0) {
        f.error = std::string("memfd_create: ") + std::strerror(errno);
      } else if ((rc = seccomp_export_bpf(ctx, fd)) != 0) {
        f.error = std::string("seccomp_export_bpf: ") + std::strerror(-rc);
      } else {
        const off_t size = ::lseek(fd, 0, SEEK_END);
        f.program.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
        if (size <= 0 || ::pread(fd, f.program.data(), static_cast<std::size_t>(size), 0) != size)
          f.error = "cannot read the exported seccomp filter back";
      }
      if (fd >= 0) ::close(fd);
    }
    seccomp_release(ctx);
    f.fprog.len = static_cast<unsigned short>(f.program.size());
    f.fprog.filter = f.program.data();
    return f;
  }();
  return filter;
}

// Remount flags a bind of `source` must keep: a mount's nosuid, nodev and
// noexec are locked in a user namespace (clearing one fails EPERM).
unsigned long locked_flags(const std::string& source) {
  struct statvfs st{};
  unsigned long flags = MS_NOSUID | MS_NODEV;
  if (::statvfs(source.c_str(), &st) == 0 && (st.f_flag & ST_NOEXEC)) flags |= MS_NOEXEC;
  return flags;
}

// The new root of a run: the system's shared libraries and loader (/usr,
// the /lib, /lib64, /bin links or directories, ld.so.cache) read-only, the
// generator's own directory read-only at /gen, the run directory
// read-write (no exec) at /run; nothing else (no /proc, /dev, /etc, /tmp).
SandboxPlan sandbox_plan(const fs::path& mount_point, const fs::path& run_dir, const std::string& generator_dir,
                         const SeccompFilter& filter) {
  SandboxPlan plan;
  plan.root = mount_point.string();
  const auto bind = [&](MountStep::Kind kind, const std::string& source, const std::string& target, bool writable,
                        unsigned long extra = 0) {
    plan.steps.push_back({kind, source, plan.root + target,
                          (writable ? 0ul : static_cast<unsigned long>(MS_RDONLY)) | locked_flags(source) | extra});
  };
  bind(MountStep::kDirectory, "/usr", "/usr", false);
  for (const char* top : {"/lib", "/lib64", "/bin", "/sbin"}) {
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(top, ec);
    if (ec || !fs::exists(status)) continue;
    if (fs::is_symlink(status))
      plan.steps.push_back({MountStep::kLink, fs::read_symlink(top, ec).string(), plan.root + top, 0});
    else if (fs::is_directory(status))
      bind(MountStep::kDirectory, top, top, false);
  }
  std::error_code ec;
  if (fs::is_regular_file("/etc/ld.so.cache", ec)) {
    plan.steps.push_back({MountStep::kMakeDirectory, "", plan.root + "/etc", 0});
    bind(MountStep::kFile, "/etc/ld.so.cache", "/etc/ld.so.cache", false);
  }
  if (!generator_dir.empty()) bind(MountStep::kDirectory, generator_dir, "/gen", false);
  bind(MountStep::kDirectory, run_dir.string(), "/run", true, MS_NOEXEC);
  plan.workdir = "/run";
  plan.uid_map = std::to_string(kSandboxUid) + " " + std::to_string(::geteuid()) + " 1\n";
  plan.gid_map = std::to_string(kSandboxUid) + " " + std::to_string(::getegid()) + " 1\n";
  plan.filter = &filter.fprog;
  return plan;
}

// The last `limit` bytes of text, trimmed, for quoting in a message.
std::string quote(const std::string& text, std::size_t limit = kMaxQuotedOutput) {
  std::string out = text.size() > limit ? "..." + text.substr(text.size() - limit) : text;
  for (char& c : out)
    if (c != '\n' && (static_cast<unsigned char>(c) < 32 || c == 127)) c = '?';
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  while (!out.empty() && out.front() == '\n') out.erase(out.begin());
  return out;
}

std::string describe_status(const ChildResult& r) {
  if (r.timed_out) return "timed out";
  if (r.exited) return "exited with status " + std::to_string(r.exit_code);
  return std::string("was killed by signal ") + std::to_string(r.signal) + " (" + ::strsignal(r.signal) + ")";
}

// Runs a build step; throws GeneratorError quoting its output on failure.
void build_step(const std::vector<std::string>& args, const std::string& directory, const std::string& what,
                const std::string& source_dir) {
  ChildSetup setup;
  setup.directory = directory;
  const ChildResult r = run_child(args, setup, std::chrono::hours(2));
  if (r.exited && r.exit_code == 0) return;
  if (r.exited && r.exit_code == 127 && r.output.find("exec failed") != std::string::npos)
    throw GeneratorError("witness generator " + source_dir + ": cannot run " + args[0] +
                         " (install it: tools/install_deps.sh)");
  throw GeneratorError("witness generator " + source_dir + ": " + what + " failed (" + args[0] + " " +
                       describe_status(r) + "):\n" + quote(r.output, 4096));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Strips leading zeros; "" for zero.
std::string_view significant(std::string_view digits) {
  while (!digits.empty() && digits.front() == '0') digits.remove_prefix(1);
  return digits;
}

// a < b for decimal digit strings.
bool decimal_less(std::string_view a, std::string_view b) {
  a = significant(a);
  b = significant(b);
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

void check_value(const nlohmann::json& value, const std::string& path, CurveId curve) {
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) check_value(item, path + "." + key, curve);
    return;
  }
  if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) check_value(value[i], path + "[" + std::to_string(i) + "]", curve);
    return;
  }
  std::string digits;
  if (value.is_number_unsigned()) {
    digits = std::to_string(value.get<std::uint64_t>());
  } else if (value.is_number_integer()) {
    throw std::invalid_argument(path + ": " + value.dump() + " is negative (inputs are field elements 0..p-1)");
  } else if (value.is_number_float()) {
    throw std::invalid_argument(path + ": " + value.dump() + " is not an integer");
  } else if (value.is_string()) {
    digits = value.get<std::string>();
    const std::string shown = digits.size() > 80 ? digits.substr(0, 80) + "..." : digits;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument(path + ": \"" + quote(shown, 80) +
                                  "\" is not a non-negative decimal integer (inputs are field elements 0..p-1, "
                                  "written in decimal)");
  } else {
    throw std::invalid_argument(path + ": " + std::string(value.type_name()) +
                                " is not a number (inputs are field elements written in decimal)");
  }
  if (!decimal_less(digits, field_prime_decimal(curve))) {
    const std::string shown = digits.size() > 90 ? digits.substr(0, 90) + "..." : digits;
    throw std::invalid_argument(path + ": " + shown + " is not below the " + curve_display_name(curve) +
                                " scalar field prime " + std::string(field_prime_decimal(curve)));
  }
}

}  // namespace

std::string_view field_prime_decimal(CurveId curve) {
  return curve == CurveId::kBn254 ? kBn254Prime : kBls12381Prime;
}

GeneratorInfo build_generator(const std::string& source_dir, const std::string& out_dir,
                              const BuildOptions& options) {
  const std::string where = "witness generator " + source_dir;
  std::error_code ec;
  if (!fs::is_directory(source_dir, ec))
    throw GeneratorError(where + ": not a directory (give the <name>_cpp directory that `circom --c` writes)");
  std::vector<std::string> missing;
  for (const char* file : kRuntimeFiles)
    if (!fs::is_regular_file(fs::path(source_dir) / file, ec)) missing.push_back(file);
  // <name>.cpp: the one .cpp that is not circom's runtime; it needs <name>.dat.
  std::vector<std::string> circuits;
  for (const auto& entry : fs::directory_iterator(source_dir, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cpp") continue;
    const std::string file = entry.path().filename().string();
    if (file == "main.cpp" || file == "calcwit.cpp" || file == "fr.cpp") continue;
    circuits.push_back(entry.path().stem().string());
  }
  if (circuits.size() > 1)
    throw GeneratorError(where + ": expected one circuit source <name>.cpp besides main.cpp, calcwit.cpp and fr.cpp, "
                                 "found " + std::to_string(circuits.size()) + " (" + circuits[0] + ".cpp, " +
                         circuits[1] + ".cpp, ...)");
  if (circuits.empty()) missing.push_back("<name>.cpp");
  else if (!fs::is_regular_file(fs::path(source_dir) / (circuits[0] + ".dat"), ec)) missing.push_back(circuits[0] + ".dat");
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw GeneratorError(where + ": missing " + list + " (expected the output of `circom --c`: main.cpp, calcwit.*, "
                                 "circom.hpp, fr.*, <name>.cpp, <name>.dat)");
  }
  GeneratorInfo info;
  info.name = circuits[0];
  // A scratch copy: the user's directory is never written, and the objects
  // of a half-finished build never reach the output directory.
  fs::create_directories(out_dir);
  const fs::path scratch = fs::path(out_dir) / (".build-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(Clock::now().time_since_epoch().count()));
  fs::create_directories(scratch);
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } cleanup{scratch};
  for (const char* file : kRuntimeFiles) fs::copy_file(fs::path(source_dir) / file, scratch / file);
  fs::copy_file(fs::path(source_dir) / (info.name + ".cpp"), scratch / (info.name + ".cpp"));
  {
    std::ofstream probe(scratch / "zkfarm_probe.cpp");
    probe << kProbeSource;
  }
  const std::string dir = scratch.string();
  for (const std::string& unit : std::vector<std::string>{"main", "calcwit", "fr", info.name, "zkfarm_probe"})
    build_step({options.cxx, "-std=c++11", options.optimize, "-I.", "-c", unit + ".cpp", "-o", unit + ".o"}, dir,
               "compiling " + unit + ".cpp", source_dir);
  build_step({options.nasm, "-felf64", "fr.asm", "-o", "fr_asm.o"}, dir, "assembling fr.asm", source_dir);
  const std::vector<std::string> common = {"calcwit.o", "fr.o", "fr_asm.o", info.name + ".o"};
  auto link = [&](const std::string& output, const std::string& main_object) {
    std::vector<std::string> args = {options.cxx, "-o", output, main_object};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), {"-lgmp", "-Wl,-z,noexecstack"});
    build_step(args, dir, "linking " + output, source_dir);
  };
  link(kBinaryName, "main.o");
  link("zkfarm_probe", "zkfarm_probe.o");
  RunLimits probe_limits;
  probe_limits.timeout = std::chrono::seconds(60);
  ChildSetup setup;
  setup.directory = dir;
  setup.limits = &probe_limits;
  fs::copy_file(fs::path(source_dir) / (info.name + ".dat"), scratch / "dat.ready");
  const ChildResult probe =
      run_child({(scratch / "zkfarm_probe").string(), (scratch / "dat.ready").string()}, setup, probe_limits.timeout);
  if (!probe.exited || probe.exit_code != 0)
    throw GeneratorError(where + ": the probe linked against its code " + describe_status(probe) + ": " +
                         quote(probe.output));
  std::istringstream lines(probe.output);
  std::string prime;
  bool have_witness = false, have_start = false, have_count = false, have_signals = false;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string key, value;
    if (!(fields >> key >> value)) continue;
    try {
      if (key == "prime") {
        prime = value;
      } else if (key == "witness") {
        info.witness_size = static_cast<std::uint32_t>(std::stoul(value)), have_witness = true;
      } else if (key == "input_start") {
        info.input_start = static_cast<std::uint32_t>(std::stoul(value)), have_start = true;
      } else if (key == "input_count") {
        info.input_count = static_cast<std::uint32_t>(std::stoul(value)), have_count = true;
      } else if (key == "input") {
        InputSignal input;
        std::string id, size;
        if (!(fields >> id >> size)) throw std::invalid_argument("short line");
        input.hash = std::stoull(value, nullptr, 16);
        input.signal_id = std::stoull(id);
        input.size = std::stoull(size);
        info.inputs.push_back(input);
      } else if (key == "witness_signals") {
        const std::size_t count = std::stoul(value);
        info.witness_signals.resize(count);
        for (auto& signal : info.witness_signals)
          if (!(fields >> signal)) throw std::invalid_argument("short list");
        have_signals = true;
      }
    } catch (const std::exception&) {
      throw GeneratorError(where + ": the probe printed an unreadable " + key + " line '" + quote(line, 200) + "'");
    }
  }
  if (prime.empty() || !have_witness || !have_start || !have_count || !have_signals)
    throw GeneratorError(where + ": the probe's report is incomplete: " + quote(probe.output));
  if (prime == kBn254Prime) info.curve = CurveId::kBn254;
  else if (prime == kBls12381Prime) info.curve = CurveId::kBls12381;
  else
    throw GeneratorError(where + ": its field prime " + prime +
                         " is neither BN254's nor BLS12-381's scalar field (circom --prime bn128 or bls12381)");
  // Into place: temporary names, then rename (readers never see half a file).
  const fs::path out(out_dir);
  fs::copy_file(scratch / kBinaryName, scratch / "binary.ready");
  fs::permissions(scratch / "binary.ready", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                                fs::perms::others_read | fs::perms::others_exec);
  fs::rename(scratch / "dat.ready", out / (std::string(kBinaryName) + ".dat"));
  fs::rename(scratch / "binary.ready", out / kBinaryName);
  return info;
}

void check_generator(const GeneratorInfo& info, CurveId curve, std::uint32_t num_vars, std::uint32_t num_public,
                     const SignalCounts* counts) {
  const std::string where = "witness generator " + info.name;
  if (info.curve != curve)
    throw GeneratorError(where + " computes over the " + curve_display_name(info.curve) +
                         " scalar field but the circuit's key is for " + curve_display_name(curve) +
                         " (compile with circom --prime " + curve_name(curve) + ")");
  if (info.witness_size != num_vars)
    throw GeneratorError(where + " writes witnesses of " + std::to_string(info.witness_size) +
                         " values but the key has " + std::to_string(num_vars) + " signals: not the same circuit");
  const std::uint32_t outputs = info.input_start > 0 ? info.input_start - 1 : 0;
  if (num_public < outputs || num_public > outputs + info.input_count)
    throw GeneratorError(where + " has " + std::to_string(outputs) + " outputs and " +
                         std::to_string(info.input_count) + " inputs, which cannot make the key's " +
                         std::to_string(num_public) + " public signals: not the same circuit");
  if (!counts) return;
  if (outputs != counts->outputs)
    throw GeneratorError(where + " has " + std::to_string(outputs) + " outputs but the circuit's .r1cs declares " +
                         std::to_string(counts->outputs) + ": not the same circuit");
  const std::uint64_t inputs = std::uint64_t(counts->public_inputs) + counts->private_inputs;
  if (info.input_count != inputs)
    throw GeneratorError(where + " reads " + std::to_string(info.input_count) +
                         " input signals but the circuit's .r1cs declares " + std::to_string(counts->public_inputs) +
                         " public and " + std::to_string(counts->private_inputs) + " private: not the same circuit");
  if (std::uint64_t(counts->outputs) + counts->public_inputs != num_public)
    throw GeneratorError("the circuit's .r1cs declares " + std::to_string(counts->outputs) + " outputs and " +
                         std::to_string(counts->public_inputs) + " public inputs but its key has " +
                         std::to_string(num_public) + " public signals: not the same circuit");
}

namespace {

// A fresh directory under temp_parent, removed with everything in it.
struct RunDirectory {
  fs::path path;
  explicit RunDirectory(const std::string& temp_parent) {
    std::string pattern = temp_parent + "/zkfarm-witgen.XXXXXX";
    if (!::mkdtemp(pattern.data()))
      throw RunFailure("cannot create a temporary directory under " + temp_parent + ": " + std::strerror(errno));
    path = pattern;
  }
  ~RunDirectory() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

const SeccompFilter& checked_seccomp_filter() {
  const SeccompFilter& filter = seccomp_filter();
  if (!filter.error.empty())
    throw RunFailure("cannot build the witness generator's seccomp filter: " + filter.error);
  return filter;
}

// A run that failed in the sandbox's own setup: RunFailure quoting why.
void throw_if_sandbox_failed(const ChildResult& r) {
  const bool setup_failed =
      r.sandbox_failed || (r.exited && r.exit_code == kSandboxSetupFailed &&
                           r.output.find("zkfarm sandbox: ") != std::string::npos);
  if (setup_failed)
    throw RunFailure("cannot set up the witness generator sandbox: " + quote(r.output, 512) + kSandboxHint);
}

// Writes the bytes of copy to path (0400; the directory is the run's own).
// Throws RunFailure naming path.
void write_copy(const SealedCopy& copy, const fs::path& path) {
  const int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
  if (out < 0) throw RunFailure("cannot create " + path.string() + ": " + std::strerror(errno));
  off_t offset = 0;
  while (static_cast<std::uint64_t>(offset) < copy.size()) {
    const ssize_t n = ::sendfile(out, copy.fd(), &offset, copy.size() - static_cast<std::uint64_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(out);
      throw RunFailure("cannot write " + path.string() + ": " + std::strerror(err));
    }
  }
  ::close(out);
}

}  // namespace

void check_sandbox(const std::string& temp_parent) {
  const SeccompFilter& filter = checked_seccomp_filter();
  RunDirectory work(temp_parent);
  fs::create_directories(work.path / "root");
  fs::create_directories(work.path / "run");
  const SandboxPlan plan = sandbox_plan(work.path / "root", work.path / "run", "", filter);
  ChildSetup setup;
  setup.sandbox = &plan;
  RunLimits limits;
  limits.timeout = std::chrono::seconds(10);
  setup.limits = &limits;
  const ChildResult r = run_child({"/usr/bin/true"}, setup, limits.timeout);
  throw_if_sandbox_failed(r);
  if (!r.exited || r.exit_code != 0)
    throw RunFailure("the witness generator sandbox's self-test (/usr/bin/true) " + describe_status(r) + ": " +
                     quote(r.output, 512) + kSandboxHint);
}

void become_subreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
    throw RunFailure(std::string("prctl(PR_SET_CHILD_SUBREAPER) failed: ") + std::strerror(errno));
  g_subreaper.store(true);
}

std::vector<std::uint8_t> run_generator(const GeneratorFiles& generator, std::string_view input_json,
                                        const std::string& temp_parent, const RunLimits& limits,
                                        std::uint64_t witness_bytes) {
  const std::string& binary = generator.binary;
  const SeccompFilter* filter = limits.sandbox ? &checked_seccomp_filter() : nullptr;
  // Read once, hashed, sealed: the program executed and the constants it
  // reads are these bytes, whatever happens to the files from here on.
  const std::string dat_path = binary + ".dat";
  std::optional<SealedCopy> program, dat;
  try {
    program.emplace(SealedCopy::of_file(binary));
    std::error_code ec;
    if (!generator.dat_sha256.empty() || fs::exists(dat_path, ec)) dat.emplace(SealedCopy::of_file(dat_path));
  } catch (const std::exception& e) {
    throw RunFailure(std::string("cannot read the witness generator: ") + e.what());
  }
  const auto check = [](const SealedCopy& copy, const std::string& expected) {
    if (!expected.empty() && copy.sha256() != expected)
      throw GeneratorMismatch("witness generator file " + copy.source() + " has sha256 " + copy.sha256() +
                              ", the circuit record says " + expected + "; it was not run");
  };
  check(*program, generator.sha256);
  if (dat) check(*dat, generator.dat_sha256);
  // After the hashes: a file that is not the recorded generator is that,
  // whatever its mode.
  if (::access(binary.c_str(), X_OK) != 0) throw RunFailure("witness generator " + binary + " is not executable");
  RunDirectory work(temp_parent);
  // Sandboxed: <work>/root is the new root's mount point, <work>/run its
  // /run and <work>/gen (the .dat's copy) its /gen; without: the generator
  // runs in <work>/run and reads <work>/gen/<name>.dat.
  const fs::path run_dir = work.path / "run";
  const fs::path gen_dir = work.path / "gen";
  fs::create_directories(run_dir);
  fs::create_directories(gen_dir);
  const std::string name = fs::path(binary).filename().string();
  if (dat) write_copy(*dat, gen_dir / (name + ".dat"));
  {
    std::ofstream input(run_dir / "input.json", std::ios::binary);
    input.write(input_json.data(), static_cast<std::streamsize>(input_json.size()));
    if (!input) throw RunFailure("cannot write the input under " + run_dir.string());
  }
  RunLimits run_limits = limits;
  // A longer witness than the circuit's is cut off by the kernel (SIGXFSZ).
  run_limits.output_bytes = std::min(limits.output_bytes, witness_bytes);
  ChildSetup setup;
  setup.limits = &run_limits;
  setup.empty_environment = true;
  setup.exec_fd = program->fd();
  std::optional<SandboxPlan> plan;
  std::vector<std::string> args;
  if (filter) {
    fs::create_directories(work.path / "root");
    plan = sandbox_plan(work.path / "root", run_dir, gen_dir.string(), *filter);
    setup.sandbox = &*plan;
    args = {"/gen/" + name, "input.json", "witness.wtns"};
  } else {
    setup.directory = run_dir.string();
    args = {(gen_dir / name).string(), "input.json", "witness.wtns"};
  }
  const ChildResult r = run_child(args, setup, limits.timeout);
  throw_if_sandbox_failed(r);
  if (r.exited && r.exit_code == 0) {
    const fs::path witness = run_dir / "witness.wtns";
    struct stat st{};
    if (::lstat(witness.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw BadInput("the witness generator exited without writing a witness" +
                     (r.output.empty() ? std::string() : ": " + quote(r.output)));
    if (static_cast<std::uint64_t>(st.st_size) != witness_bytes)
      throw BadInput("the witness generator wrote " + std::to_string(st.st_size) + " bytes; the circuit's witness is " +
                     std::to_string(witness_bytes) + " bytes");
    const std::string bytes = read_file(witness);
    if (bytes.size() != witness_bytes)
      throw BadInput("the witness generator's output changed size while being read");
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  }
  if (r.exited && (r.exit_code == 126 || r.exit_code == 127) && r.output.find("exec failed") != std::string::npos)
    throw RunFailure("cannot start the witness generator " + binary);
  std::string reason;
  if (r.timed_out) {
    reason = "the witness generator did not finish within " +
             std::to_string(limits.timeout.count()) + " ms and was killed";
  } else if (!r.exited && (r.signal == SIGXCPU || r.signal == SIGKILL)) {
    reason = "the witness generator used up its CPU-time limit (" + std::to_string(limits.cpu_seconds) +
             " s) and was killed";
  } else if (r.output.find("bad_alloc") != std::string::npos || r.output.find("Cannot allocate") != std::string::npos) {
    reason = "the witness generator ran out of its memory limit (" + std::to_string(limits.memory_bytes >> 20) +
             " MiB)";
  } else if (!r.exited && r.signal == SIGXFSZ) {
    reason = "the witness generator wrote more than the circuit's witness (" + std::to_string(run_limits.output_bytes) +
             " bytes)";
  } else if (r.output.find("Failed assert") != std::string::npos || r.output.find("Assert Failed") != std::string::npos) {
    reason = "a circuit assertion failed (" + describe_status(r) + ")";
  } else {
    reason = "the witness generator " + describe_status(r);
  }
  const std::string said = quote(r.output);
  throw BadInput(reason + (said.empty() ? std::string(" without a message") : ": " + said));
}

void check_input_values(std::string_view input_json, CurveId curve) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(input_json);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object())
    throw std::invalid_argument(std::string("expected an object of input signals, found ") + doc.type_name());
  for (const auto& [key, value] : doc.items()) check_value(value, key, curve);
}


std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : text) {
    hash ^= static_cast<std::uint64_t>(static_cast<unsigned char>(c));
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::vector<std::optional<PublicInputRef>> public_input_map(const GeneratorInfo& info, std::uint32_t num_public) {
  const std::string where = "witness generator " + info.name;
  const std::uint32_t outputs = info.input_start > 0 ? info.input_start - 1 : 0;
  std::vector<std::optional<PublicInputRef>> map(num_public);
  for (std::uint32_t k = outputs; k < num_public; ++k) {
    const std::uint32_t w = k + 1;  // witness index (0 is the constant 1)
    if (w >= info.witness_signals.size())
      throw GeneratorError(where + ": its .dat lists no signal for public signal " + std::to_string(w));
    const std::uint64_t signal = info.witness_signals[w];
    const InputSignal* found = nullptr;
    for (const InputSignal& input : info.inputs)
      if (signal >= input.signal_id && signal - input.signal_id < input.size) found = &input;
    if (!found)
      throw GeneratorError(where + ": public signal " + std::to_string(w) + " (circom signal " +
                           std::to_string(signal) + ") is not one of its input signals: not the same circuit");
    map[k] = PublicInputRef{found->hash, signal - found->signal_id};
  }
  return map;
}

std::string public_input_map_json(const std::vector<std::optional<PublicInputRef>>& map) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& entry : map) {
    if (!entry) {
      list.push_back(nullptr);
      continue;
    }
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(entry->hash));
    list.push_back({std::string(hash), entry->index});
  }
  return list.dump();
}

std::vector<std::optional<PublicInputRef>> parse_public_input_map(std::string_view text) {
  const nlohmann::json list = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) throw std::invalid_argument("public input map is not a JSON array");
  std::vector<std::optional<PublicInputRef>> map;
  map.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& entry = list[i];
    if (entry.is_null()) {
      map.emplace_back();
      continue;
    }
    const auto bad = [&] {
      return std::invalid_argument("public input map entry " + std::to_string(i) +
                                   " is not null or [16 hex digits, index]");
    };
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number_unsigned())
      throw bad();
    const std::string hash = entry[0].get<std::string>();
    if (hash.size() != 16 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) throw bad();
    map.push_back(PublicInputRef{std::stoull(hash, nullptr, 16), entry[1].get<std::uint64_t>()});
  }
  return map;
}

namespace {

// A value as circom reads it: nested arrays in order, scalars appended.
void flatten(const nlohmann::json& value, std::vector<const nlohmann::json*>& out) {
  if (value.is_array()) {
    for (const auto& item : value) flatten(item, out);
  } else {
    out.push_back(&value);
  }
}

}  // namespace

std::vector<std::string> public_input_values(std::string_view input_json,
                                             const std::vector<std::optional<PublicInputRef>>& map) {
  const nlohmann::json doc = nlohmann::json::parse(input_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) throw std::invalid_argument("is not a JSON object of input signals");
  std::vector<std::string> values(map.size());
  for (std::size_t k = 0; k < map.size(); ++k) {
    if (!map[k]) continue;
    const nlohmann::json* value = nullptr;
    std::string name;
    for (const auto& [key, item] : doc.items())
      if (fnv1a64(key) == map[k]->hash) value = &item, name = key;
    if (!value)
      throw std::invalid_argument("has no value for public signal " + std::to_string(k + 1) +
                                  " (one of the circuit's public inputs)");
    std::vector<const nlohmann::json*> flat;
    flatten(*value, flat);
    if (map[k]->index >= flat.size())
      throw std::invalid_argument(name + " has " + std::to_string(flat.size()) + " values; public signal " +
                                  std::to_string(k + 1) + " is its element " + std::to_string(map[k]->index));
    const nlohmann::json& element = *flat[map[k]->index];
    if (element.is_number_unsigned()) values[k] = std::to_string(element.get<std::uint64_t>());
    else if (element.is_string()) values[k] = element.get<std::string>();
    else
      throw std::invalid_argument(name + "[" + std::to_string(map[k]->index) + "] is not a decimal number");
  }
  return values;
}

}  // namespace zkfarm::witgen
