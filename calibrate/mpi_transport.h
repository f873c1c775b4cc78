// The MPI side of `fleetsim calibrate` under mpirun (calibrate/rank_links.h):
// a RankTransport over MPI_COMM_WORLD. Built when MPI is found
// (mpi_transport.cc); otherwise no_mpi_transport.cc answers with a message.
#pragma once

#include <memory>
#include <string>

#include "calibrate/rank_links.h"

namespace fleetsim::calibrate {

// Starts MPI (once) and returns the world's transport; null with *error set
// when fleetsim was built without MPI or MPI cannot start.
std::unique_ptr<RankTransport> MakeMpiTransport(std::string* error);
// Ends MPI if MakeMpiTransport started it (every rank must call it).
void FinishMpiTransport();
// Ends every rank at once (a rank that failed cannot leave the others
// waiting on it).
[[noreturn]] void AbortMpiTransport(int code);

}  // namespace fleetsim::calibrate
