// The built-in catalogue and policies, as the fit's tests use them.
#pragma once

#include <gtest/gtest.h>

#include "model/catalog.h"
#include "sim/runner/run.h"

namespace fleetsim::fidelity_test {

struct World {
  World() {
    EXPECT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
    RegisterBuiltins(&policies);
  }
  Catalog catalog;
  Policies policies;
};

}  // namespace fleetsim::fidelity_test
