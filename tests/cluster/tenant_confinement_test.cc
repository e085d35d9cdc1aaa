// tenant_confinement_test.cc -- what a registered tenant's job may make the
// farm read (issue 27's two last gaps), with redis-server running the
// shipped ACL users (deploy/users.acl): the coordinator as zkfarm-admin,
// the workers as zkfarm-worker, each tenant as its own user.
//   * TenantPolicyNarrowsRootsAndKeys: WitnessPolicy::tenant_policy on its
//     own -- <root>/tenants/<name> for each root, the tenant's key
//     namespace, a name that is not a tenant's refused before it becomes a
//     path, the default tenant's policy unchanged.
//   * ATenantsOwnCircuitProvesOnAWorkerThatFetchesTheStoreOverHttp: tenant
//     B registers a circuit itself (the CLI with B's URL: the record is in
//     B's namespace only) and its job proves and verifies on a worker whose
//     store is an HTTP URL, which reads B's record with the workers' user.
//   * ATenantsFileWitnessesAreReadOnlyUnderItsDirectory: tenant A's job
//     naming a witness of tenant B's directory, one directly under the
//     witness root, a symlink or `..` out of A's directory, a missing file
//     in it, fails witnessUnavailable with one answer naming A's directory;
//     A's witness there proves, as do B's in B's and the admin's anywhere
//     under the root (the default tenant's rule is unchanged).
//   * TheWorkerConfinesATenantsWitnessesToo: a coordinator whose root is
//     tenant B's directory lets through A's witness at
//     <root>/tenants/b/tenants/a/; the worker, whose root is the farm's,
//     refuses it (it lies in B's directory there), from the Task's tenant.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cluster/witness_access.h"
#include "cluster/farm_api.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "cluster/tenants.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/harness/harness.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The fixture's farm with the shipped ACL users, tenants a and b, and the
// admin's BN254 circuit shared with every tenant.
class TenantConfinementTest : public FarmTest {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>();
    redis_ = start_redis_with_shipped_users(*dir_);
    options_.redis_url = shipped_user_url(*redis_, "zkfarm-admin");
    worker_url_ = shipped_user_url(*redis_, "zkfarm-worker");
    options_.prefix = "zkfarm:";
    options_.artifacts = dir_->file("artifacts");
    fs::create_directories(options_.artifacts);
    bn254_ = farm::circuit_add(options_, runfile("formats/testdata/bn128_mul.zkey"));
    coordinator_port_ = free_port();
    RedisClient admin(options_.redis_url);
    const KeyLayout keys(options_.prefix);
    as_a_ = as_b_ = options_;
    as_a_.redis_url = add_tenant(admin, keys, TenantRecord{.name = "a"}).url(options_.redis_url);
    as_b_.redis_url = add_tenant(admin, keys, TenantRecord{.name = "b"}).url(options_.redis_url);
    share_circuit(admin, keys, bn254_.id, {"*"});
  }

  // A worker logged in as zkfarm-worker (the later --redis wins).
  std::size_t start_acl_worker(const std::string& id, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--redis", worker_url_});
    return start_worker(id, extra);
  }

  // The job of client `who`, waited for until it ends.
  farm::JobStatus wait_for(const farm::FarmOptions& who, const std::string& id) {
    eventually([&] { return farm::status(who, id).has_value(); }, 40s);
    auto s = farm::wait(who, id, 60s);
    EXPECT_TRUE(s && s->terminal()) << id << "\n" << logs();
    return s ? *s : farm::JobStatus{};
  }

  std::string worker_url_;
  farm::FarmOptions as_a_, as_b_;
};

TEST(TenantPolicy, TenantPolicyNarrowsRootsAndKeys) {
  TempDir dir;
  fs::create_directories(dir.file("one"));
  fs::create_directories(dir.file("two"));
  const WitnessPolicy farm = make_witness_policy({dir.file("one"), dir.file("two") + "/"}, "", "zkfarm:");
  const WitnessPolicy a = farm.tenant_policy("a");
  EXPECT_EQ(a.tenant, "a");
  EXPECT_EQ(a.configured_roots, (std::vector<std::string>{dir.file("one/tenants/a"), dir.file("two/tenants/a")}));
  ASSERT_EQ(a.roots.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(a.roots[i], farm.roots[i] + "/tenants/a");
  EXPECT_EQ(a.redis_key_prefix, "zkfarm:t:a:");
  // The default tenant keeps the farm's policy.
  const WitnessPolicy same = farm.tenant_policy("");
  EXPECT_EQ(same.tenant, "");
  EXPECT_EQ(same.roots, farm.roots);
  EXPECT_EQ(same.redis_key_prefix, "zkfarm:");
  // A name that is not a tenant's never becomes a path.
  for (const char* bad : {"..", "../b", "a/b", "default", "A", "a:b"})
    EXPECT_THROW(farm.tenant_policy(bad), std::invalid_argument) << bad;
  EXPECT_THROW(a.tenant_policy("b"), std::logic_error);
  // And it reads there only.
  fs::create_directories(dir.file("one/tenants/a"));
  write_file(dir.file("one/tenants/a/p.wtns"), "x");
  write_file(dir.file("one/p.wtns"), "x");
  WitnessRef inside;
  inside.kind = WitnessRef::Kind::kFile;
  inside.location = dir.file("one/tenants/a/p.wtns");
  EXPECT_EQ(fetch_witness(inside, nullptr, a, 1 << 20)->bytes().size(), 1u);
  WitnessRef above = inside;
  above.location = dir.file("one/p.wtns");
  EXPECT_EQ(fetch_witness(above, nullptr, farm, 1 << 20)->bytes().size(), 1u);
  EXPECT_THROW(fetch_witness(above, nullptr, a, 1 << 20), WitnessUnavailable);
}

// Before: the worker read the farm's record only ("circuit ... is not
// registered", unknownCircuit), so a tenant's own circuit failed on every
// worker without a store of its own.
TEST_F(TenantConfinementTest, ATenantsOwnCircuitProvesOnAWorkerThatFetchesTheStoreOverHttp) {
  // B registers the BLS circuit itself, through the CLI with its own URL.
  const CommandResult added = run_command({runfile("cli/zkfarm"), "circuit", "add",
                                           runfile("formats/testdata/bls12381_mul.zkey"), "--redis", as_b_.redis_url,
                                           "--artifacts", options_.artifacts},
                                          dir_->path());
  ASSERT_EQ(added.exit_code, 0) << added.err;
  std::string own = added.out;
  while (!own.empty() && (own.back() == '\n' || own.back() == ' ')) own.pop_back();
  ASSERT_TRUE(is_valid_circuit_id(own)) << added.out;
  RedisClient admin(options_.redis_url);
  const KeyLayout keys(options_.prefix);
  EXPECT_EQ(admin.command({"EXISTS", keys.circuit(own)}).as_integer(), 0) << "the farm has no record of it";
  EXPECT_EQ(admin.command({"EXISTS", keys.for_tenant("b").tenant_circuit(own)}).as_integer(), 1);

  // The store and the witnesses over HTTP; B's file:// witness in its own
  // directory under the worker's root.
  HttpServer http(dir_->path(), dir_->file("http-server.txt"));
  tenant_witness_file("b", "bls12381_mul.wtns");
  start_coordinator({"--witness-url-allow", "127.0.0.1"});
  start_acl_worker("w1", {"--artifacts", http.url() + "artifacts/", "--witness-url-allow", "127.0.0.1",
                          "--witness-root", dir_->path()});
  const std::string by_file = "file://" + dir_->file("tenants/b/bls12381_mul.wtns");
  const std::string by_url = http.url() + "tenants/b/bls12381_mul.wtns";
  EXPECT_EQ(farm::submit(as_b_, job_json("own", own, {by_file, by_url})), "own");
  const farm::JobStatus s = wait_for(as_b_, "own");
  ASSERT_EQ(s.state, "done") << s.error << "\n" << logs();
  expect_result_verifies(as_b_, "own", 2);
  EXPECT_NE(workers_[0]->log().find("downloading " + http.url() + "artifacts/" + own + "/circuit.zkey"),
            std::string::npos)
      << logs();
  // A, with which B's circuit is not shared, cannot use it.
  EXPECT_EQ(farm::submit(as_a_, job_json("not-mine", own, {"file://" + tenant_witness_file("a", "bls12381_mul.wtns")})),
            "not-mine");
  const farm::JobStatus refused = wait_for(as_a_, "not-mine");
  EXPECT_EQ(refused.state, "failed");
  EXPECT_EQ(refused.error_code, "unknownCircuit") << refused.error;
}

// Before: any tenant's job could read any file under the shared root,
// another tenant's witnesses included.
TEST_F(TenantConfinementTest, ATenantsFileWitnessesAreReadOnlyUnderItsDirectory) {
  const std::string root = dir_->path();
  const std::string a_dir = root + "/tenants/a";
  const std::string a_own = tenant_witness_file("a", "bn128_mul.wtns");
  const std::string b_own = tenant_witness_file("b", "bn128_mul.wtns");
  const std::string at_root = witness_file("bn128_mul.wtns");
  fs::create_symlink(b_own, a_dir + "/link.wtns");
  fs::create_directory_symlink(root + "/tenants/b", a_dir + "/b-dir");
  start_coordinator();
  start_acl_worker("w1");
  const std::map<std::string, std::string> refused = {
      {"other-tenant", "file://" + b_own},
      {"at-root", "file://" + at_root},
      {"symlink", "file://" + a_dir + "/link.wtns"},
      {"symlinked-dir", "file://" + a_dir + "/b-dir/bn128_mul.wtns"},
      {"dotdot", "file://" + a_dir + "/../b/bn128_mul.wtns"},
      {"missing", "file://" + a_dir + "/no-such.wtns"},
  };
  for (const auto& [id, url] : refused) EXPECT_EQ(farm::submit(as_a_, job_json(id, bn254_.id, {url})), id);
  EXPECT_EQ(farm::submit(as_a_, job_json("own", bn254_.id, {"file://" + a_own, "file://" + a_own})), "own");
  EXPECT_EQ(farm::submit(as_b_, job_json("own", bn254_.id, {"file://" + b_own})), "own");
  // The admin's jobs (the default tenant): anywhere under the root, as before.
  farm::submit(options_, job_json("admin-root", bn254_.id, {"file://" + at_root}));
  farm::submit(options_, job_json("admin-in-a", bn254_.id, {"file://" + a_own}));

  // One answer, reference aside, naming A's directory, for every file A
  // may not read, whether or not it exists.
  std::set<std::string> answers;
  for (const auto& [id, url] : refused) {
    const farm::JobStatus s = wait_for(as_a_, id);
    EXPECT_EQ(s.state, "failed") << id;
    EXPECT_EQ(s.error_code, "witnessUnavailable") << id << ": " << s.error;
    EXPECT_NE(s.error.find("under tenant a's witness directories (" + a_dir + ")"), std::string::npos)
        << id << ": " << s.error;
    EXPECT_NE(s.error.find("read only under tenants/a/ of each --witness-root"), std::string::npos) << s.error;
    EXPECT_EQ(s.error.find("found"), std::string::npos) << id << ": " << s.error;
    std::string answer = s.error;
    if (auto at = answer.find(url); at != std::string::npos) answer.replace(at, url.size(), "REF");
    answers.insert(answer);
  }
  EXPECT_EQ(answers.size(), 1u) << [&] {
    std::string all;
    for (const auto& a : answers) all += a + "\n";
    return all;
  }();
  EXPECT_EQ(wait_for(as_a_, "own").state, "done") << logs();
  expect_result_verifies(as_a_, "own", 2);
  EXPECT_EQ(wait_for(as_b_, "own").state, "done") << logs();
  expect_result_verifies(as_b_, "own", 1);
  EXPECT_EQ(wait_for(options_, "admin-root").state, "done") << logs();
  EXPECT_EQ(wait_for(options_, "admin-in-a").state, "done") << logs();
}

// The worker does not take the coordinator's word for it: with the
// coordinator's root set (wrongly) to B's directory, A's witness at
// <that root>/tenants/a/ passes intake, and the worker, reading under the
// farm's root, finds it in B's directory and refuses it. The same worker
// proves the admin's job from that file (the default tenant's rule).
TEST_F(TenantConfinementTest, TheWorkerConfinesATenantsWitnessesToo) {
  const std::string b_dir = dir_->file("tenants/b");
  fs::create_directories(b_dir + "/tenants/a");
  const std::string in_b = b_dir + "/tenants/a/p.wtns";
  fs::copy_file(runfile("formats/testdata/bn128_mul.wtns"), in_b);
  start_coordinator({"--witness-root", b_dir, "--max-attempts", "1"});
  const std::size_t w = start_acl_worker("w1");  // its root: the directory holding --artifacts
  EXPECT_EQ(farm::submit(as_a_, job_json("through-b", bn254_.id, {"file://" + in_b})), "through-b");
  farm::submit(options_, job_json("admin", bn254_.id, {"file://" + in_b}));
  const farm::JobStatus s = wait_for(as_a_, "through-b");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.error_code, "witnessUnavailable") << s.error;
  EXPECT_NE(s.error.find("under tenant a's witness directories (" + dir_->file("tenants/a") + ")"), std::string::npos)
      << s.error << "\n" << logs();
  EXPECT_NE(workers_[w]->log().find("tenant a's witness directories"), std::string::npos) << logs();
  EXPECT_EQ(wait_for(options_, "admin").state, "done") << logs();
  expect_result_verifies("admin", 1);
}

}  // namespace
}  // namespace zkfarm::testing
