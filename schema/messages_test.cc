// messages_test.cc -- round trips and hostile input for the wire decoder.
#include "schema/messages.h"

#include <gtest/gtest.h>

#include <random>

namespace zkfarm::wire {
namespace {

std::string hello_bytes(std::uint32_t version = PROTOCOL_VERSION) {
  capnp::MallocMessageBuilder message;
  auto envelope = message.initRoot<Envelope>();
  envelope.setProtocolVersion(version);
  auto hello = envelope.getBody().initHello();
  hello.setProtocolVersion(version);
  hello.setWorkerId("host-a/cpu");
  hello.setSessionId(42);
  hello.setCredits(2);
  auto curves = hello.initCurves(2);
  curves.set(0, Curve::BN254);
  curves.set(1, Curve::BLS12381);
  auto device = hello.initDevice();
  device.setOrdinal(-1);
  device.setUuid("cpu-1234");
  return encode(message);
}

std::span<const std::uint8_t> as_span(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(Messages, HelloRoundTrip) {
  std::string bytes = hello_bytes();
  std::string error;
  auto decoded = decode(as_span(bytes), &error);
  ASSERT_TRUE(decoded) << error;
  ASSERT_EQ(decoded->which(), Envelope::Body::HELLO);
  auto hello = decoded->envelope().getBody().getHello();
  EXPECT_EQ(std::string(hello.getWorkerId().cStr()), "host-a/cpu");
  EXPECT_EQ(hello.getSessionId(), 42u);
  EXPECT_EQ(hello.getCredits(), 2u);
  ASSERT_EQ(hello.getCurves().size(), 2u);
  EXPECT_EQ(hello.getCurves()[1], Curve::BLS12381);
  EXPECT_EQ(hello.getDevice().getOrdinal(), -1);
}

TEST(Messages, DecodedSurvivesMove) {
  std::string bytes = hello_bytes();
  auto decoded = decode(as_span(bytes), nullptr);
  ASSERT_TRUE(decoded);
  std::vector<DecodedEnvelope> v;
  v.push_back(std::move(*decoded));
  EXPECT_EQ(std::string(v[0].envelope().getBody().getHello().getWorkerId().cStr()), "host-a/cpu");
}

TEST(Messages, OtherVersionDecodesButIsFlagged) {
  std::string bytes = hello_bytes(PROTOCOL_VERSION + 1);
  std::string error;
  auto decoded = decode(as_span(bytes), &error);
  ASSERT_TRUE(decoded) << error;
  EXPECT_FALSE(decoded->version_ok());
  EXPECT_TRUE(decode(as_span(hello_bytes()), &error)->version_ok());
}

TEST(Messages, RejectsEmptyMisalignedAndHuge) {
  std::string error;
  EXPECT_FALSE(decode({}, &error));
  std::string odd(13, 'x');
  EXPECT_FALSE(decode(as_span(odd), &error));
  EXPECT_NE(error.find("8-byte words"), std::string::npos) << error;
  std::string huge(kMaxFrameBytes + 8, '\0');
  EXPECT_FALSE(decode(as_span(huge), &error));
  EXPECT_NE(error.find("exceeds"), std::string::npos) << error;
}

TEST(Messages, TruncatedMessagesAreErrors) {
  std::string bytes = hello_bytes();
  for (std::size_t n = 8; n < bytes.size(); n += 8) {
    std::string error;
    EXPECT_FALSE(decode(as_span(bytes.substr(0, n)), &error)) << "length " << n;
  }
}

TEST(Messages, RandomGarbageNeverThrows) {
  std::mt19937_64 rng(7);
  std::string valid = hello_bytes();
  for (int round = 0; round < 2000; ++round) {
    std::string bytes;
    if (round % 2 == 0) {
      bytes.resize(8 * (1 + rng() % 64));
      for (auto& c : bytes) c = static_cast<char>(rng());
    } else {
      // Flip a few bytes of a valid message: exercises pointer validation.
      bytes = valid;
      for (int k = 0; k < 3; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    std::string error;
    auto decoded = decode(as_span(bytes), &error);
    if (decoded) {
      // Whatever decoded must be safe to read.
      (void)body_name(decoded->which());
    } else {
      EXPECT_FALSE(error.empty());
    }
  }
}

// Pointers that stay inside the message but point at the wrong kind of
// object used to decode, and the handler's first read of the field threw
// (found by schema/messages_fuzz; the input is in its corpus).
TEST(Messages, FieldOfTheWrongKindIsAnError) {
  capnp::MallocMessageBuilder message;
  auto envelope = message.initRoot<Envelope>();
  envelope.setProtocolVersion(PROTOCOL_VERSION);
  auto hello = envelope.getBody().initHello();
  hello.setProtocolVersion(PROTOCOL_VERSION);
  // workerId (Text, the first pointer of Hello) points at a struct.
  capnp::AnyStruct::Builder(Hello::Builder(hello)).getPointerSection()[0].initAs<Credit>().setCredits(7);
  std::string bytes = encode(message);
  std::string error;
  EXPECT_FALSE(decode(as_span(bytes), &error));
  EXPECT_NE(error.find("malformed message"), std::string::npos) << error;
}

TEST(Messages, UnknownUnionMemberIsAnError) {
  capnp::MallocMessageBuilder message;
  auto envelope = message.initRoot<Envelope>();
  envelope.setProtocolVersion(PROTOCOL_VERSION);
  auto task = envelope.getBody().initTask();
  task.setJobId("j");
  auto witness = task.initWitness();
  witness.setFile("/w.wtns");
  // The union's discriminant is WitnessRef's only data: 7 names no member.
  capnp::AnyStruct::Builder(WitnessRef::Builder(witness)).getDataSection()[0] = 7;
  std::string bytes = encode(message);
  std::string error;
  EXPECT_FALSE(decode(as_span(bytes), &error));
  EXPECT_NE(error.find("unknown member of union"), std::string::npos) << error;
}

// Found by schema/messages_fuzz (the input is in its corpus): a capability
// pointer in a pointer field this build does not know decoded, and copying
// the message then threw. The protocol has no capabilities.
TEST(Messages, CapabilityPointerIsAnError) {
  const std::string bytes(
      "\x00\x00\x00\x00\x0b\x00\x00\x00\x00\x00\x00\x00\x01\x00\x03\x00\x01\x00\x00\x00\x07\x00\x00\x00"
      "\x00\x00\x00\x00\x02\x00\x02\x00\x09\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x03\x00\x00\x00"
      "\x05\x00\x00\x00\x1a\x00\x00\x00\x05\x00\x00\x00\x92\x00\x00\x00\x6a\x31\x00\x00\x00\x00\x00\x00"
      "\x63\x72\x64\x73\x6f\x61\x6e\x69\x6e\x00\x0b\x00\x00\x00\x00\x00\x00\x00\x01\x00\x01\x00\x00\x00",
      96);
  std::string error;
  EXPECT_FALSE(decode(as_span(bytes), &error));
  EXPECT_NE(error.find("capability"), std::string::npos) << error;
}

}  // namespace
}  // namespace zkfarm::wire
