// mailbox.h -- a thread-safe queue whose readiness is a file descriptor.
//
// Any thread may push(); the owning thread waits on fd() -- inside a
// zmq::poll together with its sockets, or through wait() -- and drains the
// queue. This is how the farm's threads talk: the network thread that owns a
// ZeroMQ socket must never block on anything but its poll, so work for it
// arrives through a Mailbox (an eventfd) that the same poll watches.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <system_error>

namespace zkfarm {

template <class T>
class Mailbox {
 public:
  Mailbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~Mailbox() { ::close(fd_); }
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Appends item and makes fd() readable. Thread-safe.
  void push(T item) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      items_.push_back(std::move(item));
    }
    const std::uint64_t one = 1;
    // A full counter (2^64 - 2 pending wake-ups) cannot happen in practice;
    // EAGAIN would only mean "already readable".
    [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
  }

  // Removes and returns everything queued; fd() stops being readable until
  // the next push.
  std::deque<T> drain() {
    std::uint64_t counter;
    [[maybe_unused]] auto n = ::read(fd_, &counter, sizeof counter);
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<T> out;
    out.swap(items_);
    return out;
  }

  // Blocks until something is queued or timeout passes. Returns true if
  // something is queued.
  bool wait(std::chrono::milliseconds timeout) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!items_.empty()) return true;
    }
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::max<long long>(0, timeout.count())));
    std::lock_guard<std::mutex> lock(mutex_);
    return !items_.empty();
  }

  int fd() const { return fd_; }

 private:
  int fd_;
  std::mutex mutex_;
  std::deque<T> items_;
};

}  // namespace zkfarm
