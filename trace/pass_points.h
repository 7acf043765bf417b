// Named points of the compile pipeline's passes stage (trace/pipeline.h)
// where passes from outside the engine run (a plugin's, nnvm/plugin.h):
//   before_passes   first, on the trace as recorded
//   after_passes    after the built-in passes (dce_after), just before fuse;
//                   "before_fuse" names the same point
// Passes at one point run in the order they were added. Only compiles that
// start later run a pass: a trace compiled before keeps its plan (the trace
// cache holds it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "nnvm/trace/pass_manager.h"

namespace nnvm::trace {

// The points, in pipeline order.
const std::vector<std::string>& pass_points();

// A pass to add at a named point.
struct PointPass {
  std::string point;
  std::string name;
  PassFn pass;
};

// Adds every pass of `passes` at its point, all or none: throws nnvm::Error
// for an unknown point or a name a pass already has (the built-in passes and
// those added here; two of `passes` alike), having added none. Thread-safe
// against compiles.
void add_passes(std::vector<PointPass> passes);
inline void add_pass(std::string point, std::string name, PassFn pass) {
  add_passes({PointPass{std::move(point), std::move(name), std::move(pass)}});
}

// Whether a pass of the stage (built in, or added here) is named `name`.
bool has_pass(std::string_view name);

}  // namespace nnvm::trace
