#include "candidate_layers.hpp"

#include <fmt/format.h>

#include "captured_model.hpp"
#include "committed_captures.hpp"
#include "config_error.hpp"
#include "stack_model.hpp"

namespace trainsim::planner {
namespace {

// What attach_capture's result depends on besides the model: the stack (its layer numerics), the
// recompute, the micro-batch, the sequence and the tensor-parallel width.
std::string layer_key(const wl::Strategy& s) {
  return fmt::format("{} {} {} {} {} {}", wl::to_string(s.stack.kind), wl::to_string(s.stack.param_dtype), wl::to_string(s.recompute),
                     s.micro_batch, s.seq, s.tp);
}

std::string path_key(const wl::Strategy& s) {
  return fmt::format("{} {} {}", wl::to_string(s.stack.kind), wl::to_string(s.stack.param_dtype), wl::to_string(s.recompute));
}

constexpr const char* CAPTURE_FLAG = "the committed capture";

// Whether `m` is a model whose layer trainsim may take from a committed capture.
bool has_captures(const wl::ModelSpec& m) {
  if (m.layer_from_capture) return true;
  if (!m.huggingface_config.empty()) return wl::has_committed_captures(m.huggingface_config);
  for (const wl::Numerics n : {wl::Numerics::BF16_MIXED, wl::Numerics::BF16}) {
    for (const bool recompute : {false, true}) {
      if (wl::committed_capture_of_scripts(m, n, recompute)) return true;
    }
  }
  return false;
}

std::string joined(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

CandidateLayers::CandidateLayers(const wl::ModelSpec& model, const Framework& framework, std::int64_t seq) : base_(model) {
  if (wl::trains_as_committed_captures(base_, base_.numerics)) base_.capture_numerics = base_.numerics;
  if (!wl::stack_model(framework.stack.kind).pytorch_eager) {
    if (base_.layer_from_capture) {
      throw ConfigError("--stack", "--stack",
                        fmt::format("a PyTorch stack (pytorch, pytorch-ddp, pytorch-fsdp or pytorch-pipelining) for {}: a {} layer "
                                    "is known only from its committed captures, which record PyTorch's ops",
                                    base_.origin, base_.name),
                        framework.named() ? std::string(wl::to_string(framework.stack.kind)) : std::string("none (every strategy)"));
    }
    identity_ = "hand-written layers";
    return;
  }
  // The framework's own stack at micro-batch 1: a capture for it is refused as `simulate` refuses it
  // (another structure, a window shorter than the sequence), before any candidate is searched.
  wl::Strategy probe;
  probe.stack = framework.stack;
  probe.micro_batch = 1;
  probe.global_batch = 1;
  probe.seq = seq;
  const std::optional<std::string> path = wl::committed_capture_for_run(base_, probe);
  if (!path) {
    if (base_.layer_from_capture) {
      throw ConfigError(base_.origin, "model_type",
                        "a family with a hand-written layer (gpt2, gpt_neox, llama, bert), or this one with a committed capture in "
                        "the numerics its stack computes in (bf16-mixed or bf16)",
                        "\"" + base_.name + "\"");
    }
    identity_ = "hand-written layers";
    return;
  }
  const std::shared_ptr<const wl::ModelCapture> capture =
      wl::attach_capture(*path, CAPTURE_FLAG, base_, probe, wl::committed_capture_name(*path));
  if (base_.layer_from_capture) base_.captured_params = capture->params;
  identity_ = "layers from committed captures (" + capture->id + ")";
}

const std::string& CandidateLayers::path_for(const wl::Strategy& s) const {
  const std::string key = path_key(s);
  if (const auto hit = paths_.find(key); hit != paths_.end()) return hit->second;
  std::string& path = paths_[key];
  try {
    path = wl::committed_capture_for_run(base_, s).value_or("");
    if (path.empty() && base_.layer_from_capture) {
      path_errors_[key] = fmt::format("no committed capture of {} in the numerics its {} layer computes in", base_.name,
                                      wl::to_string(s.stack.kind));
    }
  } catch (const ConfigError& e) {
    path_errors_[key] = e.what();
  }
  return path;
}

CandidateLayers::Layer CandidateLayers::for_candidate(const wl::Strategy& s) const {
  const std::lock_guard<std::mutex> hold(lock_);
  if (!wl::stack_model(s).pytorch_eager) {
    hand_written_stacks_.insert(std::string(wl::to_string(s.stack.kind)));
    return {&base_, std::nullopt};
  }
  const std::string key = layer_key(s);
  auto hit = attached_.find(key);
  if (hit == attached_.end()) {
    Attached a;
    const std::string& path = path_for(s);
    if (const auto error = path_errors_.find(path_key(s)); error != path_errors_.end()) {
      a.issue = Issue{"layer-capture", error->second};
    } else if (path.empty()) {
      hand_written_stacks_.insert(std::string(wl::to_string(s.stack.kind)));
    } else {
      try {
        auto doc = docs_.find(path);
        if (doc == docs_.end()) doc = docs_.emplace(path, wl::load_capture(path)).first;
        auto m = std::make_shared<wl::ModelSpec>(base_);
        m->capture = wl::attach_capture(path, doc->second, CAPTURE_FLAG, base_, s, wl::committed_capture_name(path));
        a.model = std::move(m);
      } catch (const ConfigError& e) {
        a.issue = Issue{"layer-capture", e.what()};
      }
    }
    hit = attached_.emplace(key, std::move(a)).first;
  }
  return {hit->second.model ? hit->second.model.get() : &base_, hit->second.issue};
}

std::string CandidateLayers::capture_of(const wl::Strategy& s) const {
  const std::lock_guard<std::mutex> hold(lock_);
  const auto hit = attached_.find(layer_key(s));
  return hit != attached_.end() && hit->second.model && hit->second.model->capture ? hit->second.model->capture->id : std::string();
}

std::vector<std::string> CandidateLayers::basis() const {
  const std::lock_guard<std::mutex> hold(lock_);
  // Per capture: the stacks and micro-batches it was scaled to.
  struct Use {
    std::string precision;
    bool recompute = false;
    std::set<std::string> stacks;
    std::set<std::int64_t> micro_batches;
    std::int64_t seq = 0;
  };
  std::map<std::string, Use> uses;
  std::set<std::string> refused;  // the stacks of candidates no capture could cost
  for (const auto& [key, a] : attached_) {
    if (a.issue) refused.insert(key.substr(0, key.find(' ')));
    if (!a.model || !a.model->capture) continue;
    const wl::ModelCapture& c = *a.model->capture;
    const std::string name = c.id.substr(0, c.id.rfind('#'));
    Use& u = uses[name];
    u.precision = c.doc.run.precision;
    u.recompute = c.doc.run.recompute;
    u.stacks.insert(key.substr(0, key.find(' ')));
    const auto b = c.doc.symbols.find("b"), sq = c.doc.symbols.find("s");
    if (b != c.doc.symbols.end()) u.micro_batches.insert(b->second);
    if (sq != c.doc.symbols.end()) u.seq = sq->second;
  }
  std::vector<std::string> out;
  for (const auto& [name, u] : uses) {
    std::string batches;
    for (const std::int64_t b : u.micro_batches) batches += (batches.empty() ? "" : ", ") + std::to_string(b);
    out.push_back(fmt::format("candidates of stack {}{}: each layer, the embedding and the head from the committed capture {} ({}), "
                              "scaled to the candidate's micro-batch ({}) and sequence {}",
                              joined(u.stacks), u.recompute ? " recomputing each layer" : "", name, u.precision, batches, u.seq));
  }
  if (!uses.empty()) {
    out.push_back("a captured layer is costed as `simulate` costs it, by the profile's tables; gradient accumulation, states, "
                  "communication, offload and the activations kept come from trainsim's model of the stack");
  }
  if (!refused.empty()) {
    out.push_back(fmt::format("some candidates of stack {}: not costed, no capture could be scaled to them (dropped as layer-capture; "
                              "--explain gives the reason)",
                              joined(refused)));
  }
  if (!hand_written_stacks_.empty()) {
    out.push_back(fmt::format("candidates of stack {}: trainsim's hand-written layer, not a capture (a capture records PyTorch's ops, "
                              "and costs only PyTorch stacks' layers: --stack pytorch plans with {}'s committed captures)",
                              joined(hand_written_stacks_), base_.name));
  }
  return out;
}

std::string CandidateLayers::identity() const { return identity_; }

std::shared_ptr<const CandidateLayers> candidate_layers_for(wl::ModelSpec& model, const Framework& framework, std::int64_t seq) {
  if (!model.has_architecture() || !has_captures(model)) return nullptr;
  auto layers = std::make_shared<const CandidateLayers>(model, framework, seq);
  model = layers->model();
  return layers;
}

}  // namespace trainsim::planner
