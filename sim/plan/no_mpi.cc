// Built when MPI was not found: `mpirun fleetsim plan` says so.
#include "sim/plan/batch_runner.h"

namespace fleetsim {

std::unique_ptr<BatchRunner> MakeMpiRunner(int, std::string* error) {
  *error =
      "this fleetsim was built without MPI (install Debian's openmpi-bin and libopenmpi-dev and rebuild); "
      "run without mpirun, or with -j for threads";
  return nullptr;
}

void FinishMpi() {}

}  // namespace fleetsim
