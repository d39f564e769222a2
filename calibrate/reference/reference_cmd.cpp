#include "reference_cmd.hpp"

#include <cstdio>
#include <cstdlib>

#include "../atomic_file.hpp"
#include "../errors.hpp"
#include "reference_gpu.hpp"
#include "reference_options.hpp"

namespace trainsim::calibrate::ref {

int run_reference_command(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::printf("%s", reference_usage().c_str());
      return 0;
    }
  }
  const ReferenceOptions o = parse_reference_options(args);
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);  // NVLink multicast off on the shared machines (gpu-machine notes)
  if (o.check) {
    const std::string out = check_out_dir(o.out_dir, {"check.json"});
    const nlohmann::ordered_json report = run_reference_check_gpu(o);
    write_out_dir(out, {{"check.json", report.dump(1) + "\n"}});
    const bool passed = report.at("passed").get<bool>();
    std::printf("reference --check: %s (%s/check.json)\n", passed ? "passed" : "FAILED", out.c_str());
    return passed ? 0 : EXIT_FAILED;
  }
  const std::string json_name = o.name + ".json", model_name = o.name + ".model.json";
  const std::string out = check_out_dir(o.out_dir, {json_name, model_name});
  const ReferenceRun run = run_reference_gpu(o);
  const nlohmann::ordered_json j = measured_run_json(run, model_name);
  write_out_dir(out, {{json_name, j.dump(1) + "\n"}, {model_name, model_json(o).dump(2) + "\n"}});
  const double step = j["measured"]["step_time_s"].get<double>();
  std::printf("reference %s: %d x %s, step %.4f s (median of %d), %.1f model TFLOP/s per GPU, peak %.2f GiB, loss %.4f -> %s/%s\n",
              o.name.c_str(), static_cast<int>(run.ranks.size()), run.gpu_name.c_str(), step, o.steps,
              step_flops(o) / step / run.ranks.size() * 1e-12, run.ranks[0].peak_allocated_bytes / 1073741824.0,
              run.losses.empty() ? 0.0 : run.losses.back(), out.c_str(), json_name.c_str());
  return 0;
}

}  // namespace trainsim::calibrate::ref
