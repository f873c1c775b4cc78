// LengthTable: an empirical joint distribution of (prompt, output) token
// counts, read from a length CSV in the format of the ShareGPT, arXiv and BWB
// files of project-etalon/etalon (also used by Sarathi-Serve and Vidur):
//
//   num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio
//
// Only the first two columns are used; further columns may have any name but
// every row must have as many fields as the header. Unlike a trace, the file
// is a distribution and is loaded whole (ShareGPT: 30,731 rows, 240 KB).
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/engine/rng.h"

namespace fleetsim {

class LengthTable {
 public:
  struct Row {
    int32_t prompt_tokens;
    int32_t output_tokens;
  };

  // Errors: `cannot open length CSV "path": <strerror>`; `path:line: what`
  // for a bad header or row; `path: no rows` for a table with no data.
  static Status Load(const std::string& path, std::unique_ptr<LengthTable>* out);
  static Status FromStream(std::string name, std::unique_ptr<std::istream> in,
                           std::unique_ptr<LengthTable>* out);

  // One row, uniformly at random (one Rng::Below draw).
  const Row& Sample(Rng& rng) const { return rows_[rng.Below(rows_.size())]; }

  const std::vector<Row>& rows() const { return rows_; }

 private:
  LengthTable() = default;
  std::vector<Row> rows_;  // never empty once loaded
};

}  // namespace fleetsim
