// MPI_Wait, Waitall, Waitany and Waitsome with requests of ohio's among the library's
// (client/mpi/shim/mpi_requests.h): ohio's are completed as ohiod finishes them, the library progressing
// its own in between, and the array then goes to the PMPI_ function as it is.
#include <mpi.h>

#include "client/mpi/shim/mpi_requests.h"

using namespace ohio::shim;

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  OhioRequest* r = AnyOutstanding() ? Find(*request) : nullptr;
  if (r != nullptr) {
    while (!TryComplete(r, kOhioOnlySliceUs)) LetTheLibraryProgress();
  }
  const PersistentSlots persistent(1, request);
  const int rc = PMPI_Wait(request, status);
  persistent.Restore(request);
  return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  while (TryCompleteAll(count, requests, kOhioOnlySliceUs) > 0) LetTheLibraryProgress();
  const PersistentSlots persistent(count, requests);
  const int rc = PMPI_Waitall(count, requests, statuses);
  persistent.Restore(requests);
  return rc;
}

namespace {

int Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  if (!AnyOutstanding()) return PMPI_Waitany(count, requests, index, status);
  for (unsigned within = 0;; within = kMixedSliceUs) {
    // With none of ohio's left incomplete the library may block for its own.
    if (TryCompleteAll(count, requests, within) == 0) return PMPI_Waitany(count, requests, index, status);
    int flag = 0;
    const int rc = PMPI_Testany(count, requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
  }
}

int Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!AnyOutstanding()) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  for (unsigned within = 0;; within = kMixedSliceUs) {
    if (TryCompleteAll(incount, requests, within) == 0) {
      return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    }
    const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
  }
}

}  // namespace

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  const PersistentSlots persistent(count, requests);
  const int rc = Waitany(count, requests, index, status);
  persistent.Restore(requests);
  return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  const PersistentSlots persistent(incount, requests);
  const int rc = Waitsome(incount, requests, outcount, indices, statuses);
  persistent.Restore(requests);
  return rc;
}

}  // extern "C"
