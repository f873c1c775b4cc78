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

inline EngineSpec BuiltinEngine(std::string_view name) {
  const Catalog c = BuiltinCatalog();
  const EngineSpec* e = c.FindEngine(name);
  FLEETSIM_CHECK(e != nullptr);
  return *e;
}

}  // namespace fleetsim::model_test
