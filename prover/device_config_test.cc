// device_config_test -- the GPU prover's flags parsed and validated at start
// (device_config.h): each bad value refused naming its flag, the defaults
// and the environment override.
#include "prover/device_config.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace zkfarm::prover {
namespace {

// The message of the invalid_argument f throws ("" when none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceConfig, ParsesTheFlags) {
  const DeviceConfig d = parse_device_config("none", "auto", "auto", "on");
  EXPECT_EQ(d.memory_budget, 0u);
  EXPECT_EQ(d.msm_window_bits, 0u);
  EXPECT_EQ(d.msm_waves, 0u);
  EXPECT_TRUE(d.shifted_tables);
  EXPECT_EQ(d.witness_buffers, 2u);
  EXPECT_NE(d.summary().find("2 page-locked witness buffers kept"), std::string::npos) << d.summary();
  const DeviceConfig c = parse_device_config("24GiB", "22", "16", "off");
  EXPECT_EQ(c.memory_budget, std::size_t(24) << 30);
  EXPECT_EQ(c.msm_window_bits, 22u);
  EXPECT_EQ(c.msm_waves, 16u);
  EXPECT_FALSE(c.shifted_tables);
  EXPECT_EQ(parse_device_config("auto", "auto", "auto", "on").memory_budget, kAutoDeviceBudget);
  EXPECT_NE(c.summary().find("c = 22"), std::string::npos) << c.summary();
  EXPECT_NE(c.summary().find("shifted H tables off"), std::string::npos) << c.summary();
}

TEST(DeviceConfig, RefusesBadValuesNamingTheFlag) {
  auto starts = [](const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; };
  EXPECT_TRUE(starts(error_of([] { parse_device_config("lots", "auto", "auto", "on"); }), "--device-memory-budget"));
  EXPECT_TRUE(starts(error_of([] { parse_device_config("none", "25", "auto", "on"); }), "--msm-window-bits: 25"));
  EXPECT_TRUE(starts(error_of([] { parse_device_config("none", "1", "auto", "on"); }), "--msm-window-bits: 1"));
  EXPECT_TRUE(starts(error_of([] { parse_device_config("none", "-3", "auto", "on"); }), "--msm-window-bits"));
  EXPECT_TRUE(starts(error_of([] { parse_device_config("none", "auto", "65", "on"); }), "--msm-waves: 65"));
  EXPECT_TRUE(starts(error_of([] { parse_device_config("none", "auto", "many", "on"); }), "--msm-waves"));
  EXPECT_TRUE(starts(error_of([] { parse_device_config("none", "auto", "auto", "yes"); }), "--shifted-tables"));
  DeviceConfig direct;
  direct.msm_window_bits = 30;
  EXPECT_TRUE(starts(error_of([&] { direct.validate(); }), "--msm-window-bits: 30"));
  DeviceConfig buffers;
  buffers.witness_buffers = 0;
  EXPECT_TRUE(starts(error_of([&] { buffers.validate(); }), "witness buffers kept: 0 is out of range"));
  buffers.witness_buffers = 129;
  EXPECT_TRUE(starts(error_of([&] { buffers.validate(); }), "witness buffers kept: 129"));
  buffers.witness_buffers = 128;
  EXPECT_EQ(error_of([&] { buffers.validate(); }), "");
  EXPECT_EQ(error_of([] { parse_device_config("none", "2", "64", "off"); }), "");
}

TEST(DeviceConfig, HostWait) {
  EXPECT_EQ(DeviceConfig().host_wait, HostWait::kAuto);
  EXPECT_EQ(parse_host_wait("auto"), HostWait::kAuto);
  EXPECT_EQ(parse_host_wait("spin"), HostWait::kSpin);
  EXPECT_EQ(parse_host_wait("yield"), HostWait::kYield);
  EXPECT_EQ(parse_host_wait("block"), HostWait::kBlock);
  for (HostWait wait : {HostWait::kAuto, HostWait::kSpin, HostWait::kYield, HostWait::kBlock})
    EXPECT_EQ(parse_host_wait(host_wait_name(wait)), wait);
  EXPECT_EQ(error_of([] { parse_host_wait("sleep"); }), "--host-wait: 'sleep' is not auto, spin, yield or block");
  EXPECT_EQ(error_of([] { parse_host_wait(""); }), "--host-wait: '' is not auto, spin, yield or block");
  DeviceConfig config;
  EXPECT_EQ(config.summary().find("host waits"), std::string::npos) << config.summary();
  config.host_wait = HostWait::kBlock;
  EXPECT_NE(config.summary().find("host waits: block"), std::string::npos) << config.summary();
}

TEST(DeviceConfig, EnvironmentOverride) {
  EXPECT_FALSE(shifted_tables_off_by_environment(nullptr));
  EXPECT_TRUE(shifted_tables_off_by_environment("0"));
  EXPECT_TRUE(shifted_tables_off_by_environment("off"));
  EXPECT_FALSE(shifted_tables_off_by_environment("1"));
}

}  // namespace
}  // namespace zkfarm::prover
