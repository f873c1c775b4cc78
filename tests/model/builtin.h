// Test helpers: copies of built-in catalogue entries. Loading the catalogue
// takes well under a millisecond, so each call loads it afresh rather than
// sharing a global.
#pragma once

#include <gtest/gtest.h>

#include <string_view>

#include "base/status.h"
#include "model/catalog.h"

namespace fleetsim::model_test {

inline Catalog BuiltinCatalog() {
  Catalog c;
  Status s = Catalog::LoadBuiltin(&c);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

inline ModelSpec BuiltinModel(std::string_view name) {
  const Catalog c = BuiltinCatalog();
  const ModelSpec* m = c.FindModel(name);
  FLEETSIM_CHECK(m != nullptr);  // a test names a model the zoo lacks
  return *m;
}

inline GpuSpec BuiltinGpu(std::string_view name) {
  const Catalog c = BuiltinCatalog();
  const GpuSpec* g = c.FindGpu(name);
  FLEETSIM_CHECK(g != nullptr);
  return *g;
}

// A bundled engine profile's terms for one pool (model/engine_spec.h).
inline EngineSpec BuiltinEngine(std::string_view name, const std::string& gpu = "H100-SXM",
                                const std::string& model = "Llama-3.1-8B", int tp = 1) {
  const Catalog c = BuiltinCatalog();
  const EngineProfile* e = c.FindEngine(name);
  FLEETSIM_CHECK(e != nullptr);
  EngineSpec spec;
  FLEETSIM_CHECK(ResolveEngine(*e, gpu, model, tp, &spec).ok());
  return spec;
}

}  // namespace fleetsim::model_test
