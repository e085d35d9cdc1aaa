// busy_meter.h -- the fraction of recent time a worker spent proving, as the
// coordinator sees it from the worker's heartbeats (busyTasks > 0).
//
// Each heartbeat is a sample: the time since the previous sample counts as
// busy when the previous sample said busy. fraction() covers the window
// (default 60 s) before the last sample, so it moves with the load instead of
// averaging over the worker's whole life. Resolution is one heartbeat
// interval. Not thread-safe (the scheduler thread owns it).
#pragma once

#include <chrono>
#include <deque>

namespace zkfarm {

class BusyMeter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit BusyMeter(Clock::duration window = std::chrono::seconds(60)) : window_(window) {}

  // Records that at `now` the worker was proving (busy) or idle.
  void sample(Clock::time_point now, bool busy) {
    if (!samples_.empty() && now < samples_.back().time) return;  // clocks do not go back
    if (!samples_.empty() && samples_.back().busy) busy_total_ += now - samples_.back().time;
    samples_.push_back({now, busy, busy_total_});
    // Keep one sample at or before the window's start.
    while (samples_.size() > 2 && samples_[1].time <= now - window_) samples_.pop_front();
  }

  // Busy time / elapsed time over the window before the last sample, in
  // [0, 1]; 0 before two samples.
  double fraction() const {
    if (samples_.size() < 2) return 0;
    const Sample& last = samples_.back();
    const Sample& first = samples_.front();
    const auto elapsed = last.time - first.time;
    if (elapsed <= Clock::duration::zero()) return 0;
    const double value = std::chrono::duration<double>(last.busy_total - first.busy_total).count() /
                         std::chrono::duration<double>(elapsed).count();
    return value < 0 ? 0 : value > 1 ? 1 : value;
  }

 private:
  struct Sample {
    Clock::time_point time;
    bool busy;
    Clock::duration busy_total;  // busy time up to this sample
  };
  Clock::duration window_;
  Clock::duration busy_total_{};
  std::deque<Sample> samples_;
};

}  // namespace zkfarm
