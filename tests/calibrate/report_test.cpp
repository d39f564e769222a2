// Statistics, GEMM shapes, headlines, plots and the written profile (which must load back
// through the strict loader), on synthetic measurements.
#include <gtest/gtest.h>

#include <algorithm>

#include "gemm_shapes.hpp"
#include "headlines.hpp"
#include "profile_loader.hpp"
#include "profile_writer.hpp"
#include "report.hpp"
#include "stats.hpp"
#include "strict_json.hpp"
#include "svg_plot.hpp"

namespace trainsim::calibrate {
namespace {

constexpr double GiB = 1073741824.0;

TEST(Stats, MedianQuartilesAndRange) {
  const Stats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.median, 3);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 5);
  EXPECT_EQ(s.q1, 2);
  EXPECT_EQ(s.q3, 4);
  EXPECT_EQ(s.n, 5);
  EXPECT_EQ(summarize({1, 2}).median, 1.5);
  EXPECT_THROW(summarize({}), std::invalid_argument);
  EXPECT_EQ(rates(10, {2, 5}), (std::vector<double>{5, 2}));
}

TEST(GemmShapes, LinearLayerProductsHaveTheFrameworkLayouts) {
  const auto shapes = dense_layer_shapes({2048}, {4096});
  ASSERT_EQ(shapes.size(), 12u);  // 4 layers x (forward, dgrad, wgrad)
  const GemmShape& fwd = shapes[6];  // mlp_up forward: [T,h] x [4h,h]^T
  EXPECT_EQ(fwd.layer, "mlp_up");
  EXPECT_EQ(fwd.m, 2048);
  EXPECT_EQ(fwd.n, 4 * 4096);
  EXPECT_EQ(fwd.k, 4096);
  EXPECT_EQ(fwd.layout(), "NT");
  EXPECT_EQ(shapes[8].layout(), "TN");  // wgrad: dY^T X
  EXPECT_EQ(shapes[8].k, 2048);
  // Forward plus both backward products: 3x the forward FLOPs of the layer, 24 T h^2 forward.
  double flops = 0;
  for (const auto& s : shapes) flops += s.flops();
  EXPECT_DOUBLE_EQ(flops, 3 * 24.0 * 2048 * 4096.0 * 4096);
  const auto attn = attention_shapes({2048}, 128, 1 << 30);
  ASSERT_EQ(attn.size(), 3u);
  EXPECT_EQ(attn[0].batch, (1 << 30) / (2048 * 2048));
}

Results synthetic_results() {
  Results r(false);
  auto add = [&r](std::string bench, std::string what, nlohmann::ordered_json params, double v) {
    r.add({std::move(bench), std::move(what), std::move(params), "x", summarize({v * 0.99, v, v * 1.01}), "checked"});
  };
  add("gemm", "bf16", {{"layer", "square"}, {"pass", "fwd"}, {"m", 8192}, {"n", 8192}, {"k", 8192}, {"batch", 1}, {"gpu", 0}}, 700);
  add("gemm", "bf16", {{"layer", "square"}, {"pass", "fwd"}, {"m", 8192}, {"n", 8192}, {"k", 8192}, {"batch", 1}, {"gpu", 1}}, 690);
  add("gemm", "bf16", {{"layer", "qkv"}, {"pass", "fwd"}, {"m", 2048}, {"n", 12288}, {"k", 4096}, {"batch", 1}, {"gpu", 0}}, 600);
  add("gemm", "tf32", {{"layer", "square"}, {"pass", "fwd"}, {"m", 8192}, {"n", 8192}, {"k", 8192}, {"batch", 1}, {"gpu", 0}}, 350);
  for (double b : {1 << 20, 1 << 30}) {
    add("kernels", "copy", {{"bytes", b}}, 2900);
    add("kernels", "gelu", {{"bytes", b}}, 2500);
    for (int g : {1, 2}) {
      add("host_copy", "h2d_pinned", {{"bytes", b}, {"gpus", g}}, 50 * g);
      add("host_copy", "d2h_pinned", {{"bytes", b}, {"gpus", g}}, 48 * g);
    }
    add("nccl", "all_reduce", {{"bytes", b}, {"group_size", 2}}, 300);
    add("p2p", "unidir", {{"bytes", b}, {"gpus", 2}}, 370);
  }
  add("host_copy", "latency_h2d_pinned", {{"bytes", 8}, {"gpus", 1}}, 9);
  add("p2p", "latency", {{"bytes", 8}, {"gpus", 2}}, 12);
  for (double blk : {131072.0, 8388608.0}) {
    for (int d : {1, 64}) {
      add("storage", "read", {{"block_bytes", blk}, {"depth", d}}, blk / 1e6 + d / 100.0);
      add("storage", "write", {{"block_bytes", blk}, {"depth", d}}, 1 + d / 100.0);
    }
  }
  add("cpu_adam", "bf16", {{"params", 1 << 26}, {"threads", 32}}, 3e9);
  add("host_memory", "copy", {{"bytes", GiB}, {"threads", 32}}, 150);
  return r;
}

TEST(Headlines, PickTheConfiguredFigures) {
  const auto heads = headlines(synthetic_results());
  ASSERT_EQ(heads.size(), 8u);
  EXPECT_EQ(heads[0].name, "gemm_bf16_8192_tflops");
  EXPECT_EQ(heads[0].stats->median, 690);  // the slower of the two GPUs
  EXPECT_EQ(heads[1].stats->median, 2900);
  EXPECT_EQ(heads[2].stats->median, 50);   // one GPU, 1 GiB
  EXPECT_EQ(heads[4].stats->median, 300);
  EXPECT_DOUBLE_EQ(heads[5].stats->median, 8388608 / 1e6 + 0.64);  // best read: 8 MiB blocks, depth 64
  const auto j = summary_json(heads, {{"host", "h"}});
  EXPECT_EQ(j["cpu_adam_params_per_s"], 3e9);
  EXPECT_EQ(j["spread"]["gemm_bf16_8192_tflops"]["min"], 690 * 0.99);
}

TEST(Headlines, CompareFlagsFiguresBeyondTheTolerance) {
  const nlohmann::json a{{"x", 100.0}, {"y", 10.0}, {"spread", {}}}, b{{"x", 104.0}, {"y", 11.0}};
  EXPECT_FALSE(compare_summaries(a, b, "a", "b", 0.05).agree);
  EXPECT_TRUE(compare_summaries(a, nlohmann::json{{"x", 103.0}, {"y", 10.2}}, "a", "b", 0.05).agree);
}

TEST(Report, PlotsAndMarkdownCoverEveryFamily) {
  const Results r = synthetic_results();
  const auto plots = render_plots(r);
  std::vector<std::string> names;
  for (const auto& [name, svg] : plots) {
    names.push_back(name);
    EXPECT_TRUE(svg.starts_with("<svg")) << name;
    EXPECT_NE(svg.find("</svg>"), std::string::npos) << name;
  }
  for (const char* want : {"gemm.svg", "kernels.svg", "host_copy.svg", "p2p.svg", "nccl_2gpus.svg", "storage_read.svg",
                           "storage_write.svg", "cpu_adam.svg"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  nlohmann::ordered_json prov{{"host", "h"}, {"mode", "quick"}, {"gpu", {{"available", false}}}, {"host_info", {{"cpu", "c"}}}};
  const std::string md = summary_markdown(r, headlines(r), prov, plots);
  EXPECT_NE(md.find("| `gemm_bf16_8192_tflops` | 690 TFLOP/s"), std::string::npos) << md;
  EXPECT_NE(md.find("![nccl_2gpus.svg](nccl_2gpus.svg)"), std::string::npos);
  EXPECT_EQ(svg::axis_label(65536, svg::AxisFormat::BYTES), "64K");
  EXPECT_EQ(svg::axis_label(1073741824.0 * 2, svg::AxisFormat::BYTES), "2G");
}

TEST(ProfileWriter, WrittenProfileLoadsThroughTheStrictLoader) {
  const Results r = synthetic_results();
  Options o;
  o.name = "unit-measured";
  HostInfo host;
  host.hostname = "testhost";
  host.cpu_model = "Test CPU";
  host.physical_cores = 32;
  host.memory_GiB = 250;
  host.date_day = "2026-11-26";
  GpuInfo gpu;
  gpu.available = true;
  gpu.devices = {{0, "NVIDIA H100 80GB HBM3", "0000:00:05.0", 79.19, 132, 9, 0},
                 {1, "NVIDIA H100 80GB HBM3", "0000:00:06.0", 79.19, 132, 9, 0}};
  gpu.nvlinks_per_gpu = 18;
  gpu.nvlink_remote = "switch";
  std::optional<StorageDevice> storage = StorageDevice{"virtio", "vda", "ext4", 0.27, 1e11};
  const hw::ClusterProfile base = hw::builtin_profile("dgx-h100");
  const hw::ClusterProfile p = build_profile({o, host, gpu, storage, r, base, "dgx-h100", {{"kind", "measured"}}});
  const std::string text = profile_text(p);
  const hw::ClusterProfile back = hw::load_profile(parse_json_text(text, "test"));
  EXPECT_EQ(back.name, "unit-measured");
  EXPECT_EQ(back.gpu.count_per_node, 2);
  EXPECT_EQ(back.node_count, 1);
  EXPECT_EQ(back.inter_node.topology, hw::InterNodeTopology::SINGLE_NODE);
  EXPECT_EQ(back.nic.count, 0);
  EXPECT_EQ(back.storage.kind, hw::StorageKind::VIRTIO);
  EXPECT_EQ(back.intra_node.fabric, hw::IntraNodeFabric::NVSWITCH);
  EXPECT_EQ(back.intra_node.link_GBps, 370);
  EXPECT_EQ(back.pcie.link_GBps, 48);
  EXPECT_EQ(back.pcie.gpus_per_switch, 1);  // two GPUs doubled the aggregate: not shared
  EXPECT_NEAR(back.calibration.gemm.front().efficiency, 700 / 989.4, 1e-4);  // 4 significant digits
  EXPECT_EQ(back.calibration.gemm.size(), 3u);  // the second GPU's 8192^3 is the same shape
  ASSERT_TRUE(back.calibration.cpu_adam_params_per_s);
  EXPECT_EQ(*back.calibration.cpu_adam_params_per_s, 3e9);
  EXPECT_NE(back.cost.source.find("copied from base profile dgx-h100"), std::string::npos);
  EXPECT_NE(back.storage.source.find("measured by trainsim-calibrate on testhost"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::calibrate

namespace trainsim::calibrate {
namespace {
// Reads and writes in flight together: the pair of the record with the highest combined rate (two
// streams here, 1.4 + 1.5 = 2.9 GB/s against one stream's 2.5), not each direction's own best.
TEST(ProfileWriter, MixedStorageFiguresAreThoseOfTheBestCombinedRecord) {
  Results r = synthetic_results();
  auto add = [&r](const char* what, int streams, double v) {
    r.add({"storage_mixed", what, {{"streams", streams}, {"chunk_bytes", 48 << 20}, {"request_bytes", 8 << 20}, {"io", "io_uring"}},
           "GBps", summarize({v, v, v}), "checked"});
  };
  add("read", 1, 1.6);  // one stream: the better read alone, the worse pair
  add("write", 1, 0.9);
  add("combined", 1, 2.5);
  add("read", 2, 1.4);
  add("write", 2, 1.5);
  add("combined", 2, 2.9);
  Options o;
  o.name = "unit-measured";
  HostInfo host;
  host.hostname = "testhost";
  GpuInfo gpu;
  gpu.available = true;
  gpu.devices = {{0, "NVIDIA H100 80GB HBM3", "0000:00:05.0", 79.19, 132, 9, 0}};
  const std::optional<StorageDevice> storage = StorageDevice{"virtio", "vda", "ext4", 0.27, 1e11};
  const hw::ClusterProfile base = hw::builtin_profile("dgx-h100");
  const hw::ClusterProfile p =
      hw::load_profile(parse_json_text(profile_text(build_profile({o, host, gpu, storage, r, base, "dgx-h100", {{"kind", "measured"}}})), "test"));
  EXPECT_EQ(p.storage.mixed_read_GBps, 1.4);
  EXPECT_EQ(p.storage.mixed_write_GBps, 1.5);
  EXPECT_NE(p.storage.source.find("2 stream(s), each one 48 MiB chunk read and one written at once in 8 MiB"), std::string::npos)
      << p.storage.source;
  const hw::ClusterProfile without =
      build_profile({o, host, gpu, storage, synthetic_results(), base, "dgx-h100", {{"kind", "measured"}}});
  EXPECT_EQ(without.storage.mixed_read_GBps, 0);
  EXPECT_EQ(without.storage.mixed_write_GBps, 0);
}

TEST(ProfileWriter, GpuFamilyTellsH100FromH200) {
  EXPECT_EQ(gpu_family("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(gpu_family("H100-SXM5-80GB"), "H100");
  EXPECT_EQ(gpu_family("NVIDIA H200"), "H200");
  EXPECT_EQ(gpu_family("Tesla V100-SXM2-32GB"), "V100");
  EXPECT_EQ(gpu_family("GeForce RTX"), "");
}
}  // namespace
}  // namespace trainsim::calibrate

namespace trainsim::calibrate {
namespace {
// A full sweep's profile must stay compilable as a built-in (hwprofiles embeds each file as a
// string literal whose length is computed in a constexpr loop limited to 262144 steps).
TEST(ProfileWriter, AFullSweepProfileStaysSmall) {
  Results r = synthetic_results();
  int i = 0;
  for (const auto& s : dense_layer_shapes({512, 2048, 8192, 16384}, {1024, 2048, 4096, 8192, 12288, 16384, 25600})) {
    for (const char* p : {"bf16", "fp16", "tf32", "fp32"}) {
      r.add({"gemm", p, {{"layer", s.layer}, {"pass", s.pass}, {"m", s.m}, {"n", s.n}, {"k", s.k}, {"batch", 1}, {"gpu", 0}},
             "TFLOPs", summarize({400.0 + 0.123456789 * ++i}), "checked"});
    }
  }
  Options o;
  HostInfo host;
  GpuInfo gpu;
  const hw::ClusterProfile base = hw::builtin_profile("dgx-h100");
  const std::string text =
      profile_text(build_profile({o, host, gpu, std::nullopt, r, base, "dgx-h100", {{"kind", "measured"}}}));
  EXPECT_LT(text.size(), 200000u);
  EXPECT_NE(text.find("\"efficiency\":0.4"), std::string::npos);  // 4 significant digits, one entry per line
}
}  // namespace
}  // namespace trainsim::calibrate

namespace trainsim::calibrate {
namespace {
// The interference grid's raw results become one profile point per cell: the collective's
// median beside GEMMs and alone, the GEMM's slowdown beside collectives (noise below 1 kept at 1).
TEST(ProfileWriter, InterferenceCellsBecomeTablePoints) {
  Results r = synthetic_results();
  const nlohmann::ordered_json cell{{"gpus", 2},       {"collective", "all_gather"}, {"dtype", "bf16"},
                                    {"bytes", 1 << 26}, {"gemm_m", 2048},             {"gemm_n", 16384},
                                    {"gemm_k", 4096},   {"gemm_dtype", "bf16"}};
  nlohmann::ordered_json beside = cell, gemm = cell;
  beside["alone_s_median"] = 190e-6;
  beside["gemm_alone_s_median"] = 348e-6;
  r.add({"interference", "collective_beside_gemm", beside, "s", summarize({409e-6, 410e-6, 420e-6}), "covered"});
  gemm["alone_s_median"] = 348e-6;
  r.add({"interference", "gemm_beside_collective", gemm, "slowdown", summarize({1.146, 1.147, 1.15}), "covered"});
  nlohmann::ordered_json other = cell;
  other["bytes"] = 1 << 20;
  other["alone_s_median"] = 15e-6;
  other["gemm_alone_s_median"] = 348e-6;
  r.add({"interference", "collective_beside_gemm", other, "s", summarize({250e-6}), "covered"});
  r.add({"interference", "gemm_beside_collective", other, "slowdown", summarize({0.99}), "covered"});
  Options o;
  HostInfo host;
  GpuInfo gpu;
  const hw::ClusterProfile base = hw::builtin_profile("dgx-h100");
  const hw::ClusterProfile p = hw::load_profile(parse_json_text(
      profile_text(build_profile({o, host, gpu, std::nullopt, r, base, "dgx-h100", {{"kind", "measured"}}})), "test"));
  ASSERT_TRUE(p.calibration.interference);
  const auto& pts = p.calibration.interference->points;
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].bytes, 1 << 20);  // sorted by size
  EXPECT_EQ(pts[0].compute_slowdown, 1.0);
  EXPECT_EQ(pts[1].collective, "all_gather");
  EXPECT_EQ(pts[1].gemm_k, 4096);
  EXPECT_EQ(pts[1].gemm_alone_us, 348);
  EXPECT_EQ(pts[1].collective_alone_us, 190);
  EXPECT_EQ(pts[1].collective_beside_us, 410);
  EXPECT_EQ(pts[1].compute_slowdown, 1.147);
  EXPECT_NE(p.calibration.interference->source.find("interference_bench.cpp"), std::string::npos);
}
}  // namespace
}  // namespace trainsim::calibrate
