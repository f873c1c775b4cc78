// ServeGenDataset: the per-window request length distributions of one
// ServeGen client (alibaba/ServeGen, data/<category>/<model>/
// chunk-N-dataset.json), beside that client's chunk-N-trace.csv.
//
// The file is one JSON object: window start (seconds, as a string key) ->
// {field: distribution}, where each distribution is a string holding a
// Python dict literal {value: probability, ...}. Only the fields
// "input_tokens" and "output_tokens" are used (values: non-negative integer
// token counts); the rest ("reason_ratio" of reasoning models, multimodal
// counts) are ignored. As in ServeGen's ClientPool, an entry with an empty
// distribution is dropped, and a window uses the entry with the largest
// start at or before its own start.
//
// Unlike a trace, the file is a distribution and is loaded whole (the
// bundled deepseek-r1 client files are 30 to 200 KB).
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/engine/time.h"

namespace fleetsim {

class ServeGenDataset {
 public:
  // Errors: `cannot open length dataset "path": ...`; `path: what` naming
  // the window and field for bad content; `path: no usable entries`.
  static Status Load(const std::string& path, std::unique_ptr<ServeGenDataset>* out);
  static Status FromText(std::string name, const std::string& text, std::unique_ptr<ServeGenDataset>* out);

  // The entry covering a window that starts at `window_start`; -1 when every
  // entry starts later.
  int Find(SimTime window_start) const;

  // One (prompt, output) pair from entry `e`, each drawn by inverse CDF from
  // its own uniform (see ServeGenTraceSource for why not one shared draw).
  // Counts of 0 come out as 1 (a request has at least one token each way).
  // REQUIRES: 0 <= e < number of entries.
  void Sample(int e, Rng& rng, int32_t* prompt, int32_t* output) const;

  const std::string& name() const { return name_; }

 private:
  struct Dist {
    std::vector<int32_t> values;  // ascending
    std::vector<double> cum;      // cumulative weights; cum.back() = total > 0
    int32_t Draw(Rng& rng) const;
  };
  struct Entry {
    SimTime start;
    Dist input, output;
  };
  static Status ParseDist(const std::string& where, const std::string& text, Dist* out, bool* empty);

  std::string name_;
  std::vector<Entry> entries_;  // ascending start
};

}  // namespace fleetsim
