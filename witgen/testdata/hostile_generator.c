/* hostile_generator.c -- a harmless stand-in for a hostile witness
 * generator, for sandbox_test: called like circom's (`<binary> input.json
 * out.wtns`), it tries the escape that input.json names and says what it
 * found. An escape that works prints "ESCAPED: ..." and exits 0 after
 * writing an honest witness (so the run looks like a success); one that
 * fails prints "contained: ..." and exits 3. "honest" writes the witness
 * only. WITNESS_BYTES (-D at build) is the circuit's witness size.
 *
 * input.json: {"mode": "<mode>", "arg": "<text>"} with mode one of
 *   honest      the witness, nothing else
 *   env         any environment variable at all (the worker's secrets)
 *   read        open and read the file `arg` (a key, another job's witness,
 *               /proc/<pid>/environ, cmdline or mem)
 *   write       create the file `arg` (outside the run directory)
 *   connect     a TCP connection to 127.0.0.1:`arg`
 *   setsid      fork a child that calls setsid(), names itself `arg` and
 *               sleeps; the parent writes the witness and exits 0
 *   ptrace      PTRACE_TRACEME, then process_vm_readv of our own memory
 *   unshare     a new user namespace
 *   huge        a witness far larger than WITNESS_BYTES
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

extern char** environ;

static char input[4096];

/* The string value of "key" in input.json ("" when absent). */
static const char* field(const char* key, char* out, size_t size) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\": \"", key);
  const char* at = strstr(input, pattern);
  out[0] = 0;
  if (!at) return out;
  at += strlen(pattern);
  size_t n = 0;
  while (at[n] && at[n] != '"' && n + 1 < size) n++;
  memcpy(out, at, n);
  out[n] = 0;
  return out;
}

static int write_witness(const char* path, size_t bytes) {
  FILE* out = fopen(path, "wb");
  if (!out) return 1;
  for (size_t i = 0; i < bytes; i++) fputc((int)(i * 7 % 251), out);
  return fclose(out) != 0;
}

static int escaped(const char* what, const char* detail, const char* witness) {
  printf("ESCAPED: %s: %.200s\n", what, detail);
  fflush(stdout);
  return write_witness(witness, WITNESS_BYTES);
}

static int contained(const char* what) {
  printf("contained: %s: %s\n", what, strerror(errno));
  return 3;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* in = fopen(argv[1], "r");
  if (!in) return 2;
  input[fread(input, 1, sizeof input - 1, in)] = 0;
  fclose(in);
  char mode[64], arg[1024];
  field("mode", mode, sizeof mode);
  field("arg", arg, sizeof arg);
  if (!strcmp(mode, "honest")) return write_witness(argv[2], WITNESS_BYTES);
  if (!strcmp(mode, "env")) {
    if (environ && environ[0]) return escaped("environment", environ[0], argv[2]);
    errno = ENOENT;
    return contained("environment is empty");
  }
  if (!strcmp(mode, "read")) {
    int fd = open(arg, O_RDONLY);
    if (fd < 0) return contained(arg);
    char data[256];
    ssize_t n = read(fd, data, sizeof data - 1);
    if (n < 0) return contained(arg);
    data[n] = 0;
    for (ssize_t i = 0; i < n; i++)
      if (data[i] == 0 || data[i] == '\n') data[i] = ' ';
    return escaped(arg, data, argv[2]);
  }
  if (!strcmp(mode, "write")) {
    int fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return contained(arg);
    if (write(fd, "escaped\n", 8) != 8) return contained(arg);
    close(fd);
    return escaped("wrote", arg, argv[2]);
  }
  if (!strcmp(mode, "connect")) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return contained("socket");
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)atoi(arg));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, (struct sockaddr*)&addr, sizeof addr) != 0) return contained("connect");
    return escaped("connected to 127.0.0.1", arg, argv[2]);
  }
  if (!strcmp(mode, "setsid")) {
    pid_t child = fork();
    if (child < 0) return contained("fork");
    if (child == 0) {
      setsid();
      close(0); /* a real escapee lets go of the run's output pipe */
      close(1);
      close(2);
      prctl(PR_SET_NAME, arg, 0, 0, 0);
      for (int i = 0; i < 600; i++) sleep(1);
      _exit(0);
    }
    usleep(100000);  /* the child has called setsid() and named itself */
    return write_witness(argv[2], WITNESS_BYTES);
  }
  if (!strcmp(mode, "ptrace")) {
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) == 0) return escaped("ptrace", "PTRACE_TRACEME", argv[2]);
    if (errno != EPERM) return contained("ptrace (not by the filter)");
    char secret[16] = "mine", copy[16];
    struct iovec local = {copy, sizeof copy}, remote = {secret, sizeof secret};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) >= 0)
      return escaped("process_vm_readv", copy, argv[2]);
    return contained("ptrace and process_vm_readv");
  }
  if (!strcmp(mode, "unshare")) {
    if (unshare(CLONE_NEWUSER) == 0) return escaped("unshare", "a new user namespace", argv[2]);
    return contained("unshare");
  }
  if (!strcmp(mode, "huge")) {
    FILE* out = fopen(argv[2], "wb");
    if (!out) return contained("open");
    static char block[1 << 16];
    for (int i = 0; i < 1024; i++)
      if (fwrite(block, 1, sizeof block, out) != sizeof block) return contained("write");
    fclose(out);
    printf("ESCAPED: huge: a 64 MiB witness\n");
    return 0;
  }
  return 2;
}
