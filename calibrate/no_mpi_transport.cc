// Built without MPI: `fleetsim calibrate` under mpirun says how to get it.
#include <cstdlib>

#include "calibrate/mpi_transport.h"

namespace fleetsim::calibrate {

std::unique_ptr<RankTransport> MakeMpiTransport(std::string* error) {
  *error =
      "this fleetsim was built without MPI: install Debian's openmpi-bin and libopenmpi-dev and rebuild to measure "
      "links between nodes";
  return nullptr;
}
void FinishMpiTransport() {}
void AbortMpiTransport(int code) { std::exit(code); }

}  // namespace fleetsim::calibrate
