#pragma once
// Two "hosts" for the multi-node tests: two network namespaces joined by a veth pair, with
// addresses only they use (10.77.0.1/24 and 10.77.0.2/24 unless given). Made by `ip` (root only);
// the destructor deletes both namespaces (which deletes the veth pair with them), also when the
// test fails. Where they cannot be made, available() is false and why() says why: the test then
// WARNs and returns (never a silent pass).
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tensor/core/error.h"

namespace ruccl::testing {

class NetnsPair {
 public:
  explicit NetnsPair(std::string a_address = "10.77.0.1", std::string b_address = "10.77.0.2")
      : a_address_(std::move(a_address)), b_address_(std::move(b_address)) {
    const std::string tag = str(::getpid() % 100000);
    a_ = "ruccl_a_" + tag;
    b_ = "ruccl_b_" + tag;
    a_if_ = "rva" + tag;
    b_if_ = "rvb" + tag;
    if (::geteuid() != 0) {
      why_ = "network namespaces need root (CI runs as root)";
      return;
    }
    if (std::system("ip -V > /dev/null 2>&1") != 0) {
      why_ = "the ip tool (iproute2) is missing";
      return;
    }
    remove();  // a namespace left by a crashed run of this pid
    const std::string steps[] = {
        "ip netns add " + a_,
        "ip netns add " + b_,
        "ip link add " + a_if_ + " type veth peer name " + b_if_,
        "ip link set " + a_if_ + " netns " + a_,
        "ip link set " + b_if_ + " netns " + b_,
        in_a("ip addr add " + a_address_ + "/24 dev " + a_if_),
        in_b("ip addr add " + b_address_ + "/24 dev " + b_if_),
        in_a("ip link set " + a_if_ + " up"),
        in_b("ip link set " + b_if_ + " up"),
        in_a("ip link set lo up"),
        in_b("ip link set lo up"),
    };
    for (const std::string& step : steps) {
      if (std::system((step + " > /dev/null 2>&1").c_str()) != 0) {
        why_ = "`" + step + "` failed (no permission to make namespaces here?)";
        remove();
        return;
      }
    }
    ok_ = true;
  }
  ~NetnsPair() { remove(); }
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  bool available() const { return ok_; }
  const std::string& why() const { return why_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  const std::string& a_address() const { return a_address_; }
  const std::string& b_address() const { return b_address_; }
  const std::string& a_interface() const { return a_if_; }
  const std::string& b_interface() const { return b_if_; }

 private:
  std::string in_a(const std::string& cmd) const { return "ip netns exec " + a_ + " " + cmd; }
  std::string in_b(const std::string& cmd) const { return "ip netns exec " + b_ + " " + cmd; }
  void remove() {
    if (std::system(("ip netns del " + a_ + " > /dev/null 2>&1").c_str()) != 0) {
    }
    if (std::system(("ip netns del " + b_ + " > /dev/null 2>&1").c_str()) != 0) {
    }
    if (std::system(("ip link del " + a_if_ + " > /dev/null 2>&1").c_str()) != 0) {
    }
  }

  std::string a_address_, b_address_;
  std::string a_, b_, a_if_, b_if_;
  std::string why_;
  bool ok_ = false;
};

}  // namespace ruccl::testing
