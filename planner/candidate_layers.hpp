#pragma once
// The layer each candidate of a plan is costed with. A model with committed captures (a Hugging Face
// config of a captured family, or a model of our scripts' structure: workloads/committed_captures.hpp)
// takes, for each candidate of a PyTorch stack, the capture `simulate` takes for that strategy
// (committed_capture_for_run: its wrapper's layer numerics and its recompute), scaled to the
// candidate's micro-batch and sequence (attach_capture), so that a candidate replays in `plan` as the
// same strategy does in `simulate`. PyTorch's stacks split no layer (tp 1), so no candidate needs a
// tensor-parallel split of a capture. A candidate of another stack (idealized, megatron, deepspeed:
// each runs its own layer, not PyTorch's ops) keeps the model's hand-written layer, and the answer
// says which stacks did (basis()); one whose capture cannot be scaled to it is dropped with the
// reason, as `simulate` refuses it.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "capture_document.hpp"
#include "estimator.hpp"
#include "framework.hpp"
#include "model.hpp"
#include "strategy.hpp"

namespace trainsim::planner {

class CandidateLayers {
 public:
  // `model` as the question resolved it. Throws ConfigError where `simulate` would refuse every
  // candidate the framework can propose: a config whose structure no committed capture has, a
  // sequence past the model's window, or a family known only from its captures planned for a stack
  // that runs no PyTorch layer.
  CandidateLayers(const wl::ModelSpec& model, const Framework& framework, std::int64_t seq);

  // The model with the parameter counts of its captures (a family known only from its captures
  // counts its parameters from them): what the question states and searches with.
  const wl::ModelSpec& model() const { return base_; }

  struct Layer {
    const wl::ModelSpec* model = nullptr;  // valid while this object lives
    std::optional<Issue> issue;            // instead of a model: why its capture cannot cost it
  };
  // Safe to call from several threads.
  Layer for_candidate(const wl::Strategy& s) const;

  // How the candidates asked for so far were costed, for the answer ("Basis: ..." lines).
  std::vector<std::string> basis() const;
  // The capture a candidate's layer came from (its id), or empty where none.
  std::string capture_of(const wl::Strategy& s) const;
  // What a cache keyed by the question's model must add: where its captures come from.
  std::string identity() const;

 private:
  struct Attached {
    std::shared_ptr<const wl::ModelSpec> model;
    std::optional<Issue> issue;
  };
  const std::string& path_for(const wl::Strategy& s) const;  // "" where none applies; caller holds lock_
  wl::ModelSpec base_;
  std::string identity_;
  mutable std::mutex lock_;
  mutable std::map<std::string, std::string> paths_;        // stack, param_dtype, recompute -> capture ("": none)
  mutable std::map<std::string, std::string> path_errors_;  // the same key -> why its candidates cannot be costed
  mutable std::map<std::string, wl::CaptureDocument> docs_;  // capture path -> loaded
  mutable std::map<std::string, Attached> attached_;         // the strategy's layer key -> model
  mutable std::set<std::string> hand_written_stacks_;        // stacks whose candidates kept base_'s layer
};

// The question's layers where `model` has committed captures, else null (every candidate keeps the
// model's layer, and the answer says nothing of captures). May update `model`'s parameter counts
// (CandidateLayers::model()).
std::shared_ptr<const CandidateLayers> candidate_layers_for(wl::ModelSpec& model, const Framework& framework, std::int64_t seq);

}  // namespace trainsim::planner
