// A data file compiled into the binary (see cmake/Embed.cmake).
#pragma once

#include <span>
#include <string_view>

namespace fleetsim {

struct EmbeddedFile {
  std::string_view name;      // file name without folder, e.g. "H100-SXM.json"
  std::string_view contents;  // the file's bytes
};

}  // namespace fleetsim
