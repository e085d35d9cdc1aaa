// busy_meter_test.cc -- BusyMeter over a synthetic heartbeat timeline.
#include "coordinator/busy_meter.h"

#include <gtest/gtest.h>

namespace zkfarm {
namespace {

using std::chrono::seconds;

TEST(BusyMeter, FractionOverTheWindow) {
  BusyMeter meter(seconds(60));
  const auto t0 = BusyMeter::Clock::time_point{} + seconds(1000);
  EXPECT_EQ(meter.fraction(), 0);
  meter.sample(t0, true);
  EXPECT_EQ(meter.fraction(), 0);
  // Busy for 30 s, idle for 30 s.
  for (int i = 1; i <= 30; ++i) meter.sample(t0 + seconds(i), i < 30);
  for (int i = 31; i <= 60; ++i) meter.sample(t0 + seconds(i), false);
  EXPECT_NEAR(meter.fraction(), 0.5, 1e-9);
  // Another 60 s idle: the busy half has left the window.
  for (int i = 61; i <= 120; ++i) meter.sample(t0 + seconds(i), false);
  EXPECT_NEAR(meter.fraction(), 0.0, 1e-9);
  // Busy throughout the next 60 s.
  meter.sample(t0 + seconds(121), true);
  for (int i = 122; i <= 181; ++i) meter.sample(t0 + seconds(i), true);
  EXPECT_NEAR(meter.fraction(), 1.0, 1.0 / 60 + 1e-9);
  // A sample from the past is ignored.
  meter.sample(t0, false);
  EXPECT_GT(meter.fraction(), 0.9);
}

}  // namespace
}  // namespace zkfarm
