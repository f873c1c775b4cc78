// Private to model/: the JSON catalogues compiled into the library by
// fleetsim_embed() (see model/CMakeLists.txt). Catalog::LoadBuiltin is the
// only reader.
#pragma once

#include <span>

#include "base/embedded.h"

namespace fleetsim {

std::span<const EmbeddedFile> EmbeddedZoo();       // model/zoo/*.json
std::span<const EmbeddedFile> EmbeddedHardware();  // model/hardware/*.json
std::span<const EmbeddedFile> EmbeddedEngines();   // model/engines/*.json

}  // namespace fleetsim
