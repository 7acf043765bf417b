// signature_hash and same_signature, the trace cache's fast path, agree with
// the canonical text they stand for: on the traces random programs flush,
// same_signature holds exactly when the texts are equal, and equal texts have
// equal hashes.
#include "nnvm/trace/recorder.h"
#include "nnvm/trace/signature.h"
#include "random_program.h"

namespace nnvm::testing {
namespace {

TEST(Signature, FastPathAgreesWithTheText) {
  std::vector<trace::Trace> traces;
  trace::set_flush_observer([&](const trace::Trace& t) { traces.push_back(t); });
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const Program p = generate_program(seed, 12);
    // a second scale: the same signatures with new Scalar values
    for (double scale : {1.0, 0.5}) run_program(p, Mode::Traced, scale);
  }
  trace::set_flush_observer(nullptr);
  ASSERT_GT(traces.size(), 20u);
  std::vector<trace::Signature> sigs;
  for (const trace::Trace& t : traces) sigs.push_back(trace::signature(t));
  int64_t equal_pairs = 0;
  for (size_t i = 0; i < traces.size(); ++i) {
    EXPECT_EQ(trace::signature_hash(traces[i]), sigs[i].hash);
    for (size_t j = 0; j < traces.size(); ++j) {
      const bool same = sigs[i].key == sigs[j].key;
      ASSERT_EQ(trace::same_signature(traces[i], traces[j]), same) << sigs[i].key << "\n" << sigs[j].key;
      if (same) EXPECT_EQ(sigs[i].hash, sigs[j].hash);
      else EXPECT_NE(sigs[i].hash, sigs[j].hash) << sigs[i].key << "\n" << sigs[j].key;
      equal_pairs += same && i != j;
    }
  }
  EXPECT_GT(equal_pairs, 0);  // the second scale replayed the first's signatures
}

}  // namespace
}  // namespace nnvm::testing
