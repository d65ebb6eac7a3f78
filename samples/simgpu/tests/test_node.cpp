// Node descriptions: parsing, merging over the built-in default, derived link
// bandwidths, and errors that name the file.
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "node.hpp"

namespace {

std::string read(const std::string& name) {
  std::ifstream in(std::string(SIMGPU_NODES_DIR) + "/" + name);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(Node, DefaultIsOneH200OnGen5x16) {
  const simgpu::NodeDesc node = simgpu::parse_node(read("default.json"), "default.json");
  ASSERT_EQ(1u, node.devices.size());
  const simgpu::DeviceDesc& d = node.devices[0];
  EXPECT_EQ("simgpu H200 (simulated)", d.name);
  EXPECT_EQ(5, d.pcie.gen_current);
  EXPECT_EQ(16, d.pcie.width_current);
  EXPECT_NEAR(53.56, d.pinned_gbps, 0.01);  // 3.938 GB/s/lane * 16 * 0.85
  EXPECT_LT(d.pageable_gbps, d.pinned_gbps);
  EXPECT_EQ("00000000:18:00.0", d.pci_bus_id);
  EXPECT_EQ(0x233510DEu, d.pci_device_id);
  // The file and the built-in copy are the same description.
  EXPECT_EQ(simgpu::parse_node("{}", "built-in").fingerprint, node.fingerprint);
}

TEST(Node, DegradedLinkSlowsCopies) {
  const simgpu::NodeDesc node = simgpu::parse_node(read("pcie-gen3-x8.json"), "pcie-gen3-x8.json");
  const simgpu::DeviceDesc& d = node.devices.at(0);
  EXPECT_EQ(3, d.pcie.gen_current);
  EXPECT_EQ(8, d.pcie.width_current);
  EXPECT_EQ(5, d.pcie.gen_max);
  EXPECT_EQ(16, d.pcie.width_max);
  EXPECT_NEAR(6.70, d.pinned_gbps, 0.01);
}

TEST(Node, TwoDevicesAreDistinguishable) {
  const simgpu::NodeDesc node = simgpu::parse_node(read("two-devices.json"), "two-devices.json");
  ASSERT_EQ(2u, node.devices.size());
  EXPECT_NE(node.devices[0].pci_bus_id, node.devices[1].pci_bus_id);
  EXPECT_NE(node.devices[0].uuid, node.devices[1].uuid);
}

TEST(Node, NoDeviceAndThrottledNodes) {
  EXPECT_TRUE(simgpu::parse_node(read("no-device.json"), "no-device.json").devices.empty());
  const simgpu::NodeDesc hot = simgpu::parse_node(read("throttled.json"), "throttled.json");
  EXPECT_NEAR(1095.0 / 1980.0, hot.devices.at(0).compute_clock_ratio(), 1e-9);
  EXPECT_EQ(0x48u, hot.devices.at(0).clock_event_reasons);
}

TEST(Node, KernelOverridesMatchMangledShortAndUnqualifiedNames) {
  const simgpu::NodeDesc node = simgpu::parse_node(R"({"kernels": {"ns::scale": {"us": 7}}})", "inline");
  EXPECT_NE(nullptr, node.kernel_override("_ZN2ns5scaleEPfi", "ns::scale", "scale"));
  EXPECT_NE(nullptr, node.kernel_override("x", "y", "stream_triad"));  // from the built-in table
  EXPECT_EQ(nullptr, node.kernel_override("x", "y", "z"));
}

TEST(Node, ErrorsNameTheSource) {
  try {
    simgpu::parse_node("{ not json", "broken.json");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("broken.json"));
  }
  EXPECT_THROW(simgpu::parse_node(R"({"kernels": {"k": {"class": "io"}}})", "bad-class.json"), std::runtime_error);
}

}  // namespace
