// MPI_Test, Testall, Testany, Testsome and MPI_Request_get_status with requests of ohio's among
// the library's (client/mpi/shim/mpi_requests.h): ohio's that ohiod has finished are completed first,
// without waiting, then the array goes to the PMPI_ function as it is.
#include <mpi.h>

#include "client/mpi/shim/mpi_requests.h"

using namespace ohio::shim;

extern "C" {

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  TryCompleteAll(1, request, 0);
  const PersistentSlots persistent(1, request);
  const int rc = PMPI_Test(request, flag, status);
  persistent.Restore(request);
  return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  TryCompleteAll(count, requests, 0);
  const PersistentSlots persistent(count, requests);
  const int rc = PMPI_Testall(count, requests, flag, statuses);
  persistent.Restore(requests);
  return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  TryCompleteAll(count, requests, 0);
  const PersistentSlots persistent(count, requests);
  const int rc = PMPI_Testany(count, requests, index, flag, status);
  persistent.Restore(requests);
  return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  TryCompleteAll(incount, requests, 0);
  const PersistentSlots persistent(incount, requests);
  const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
  persistent.Restore(requests);
  return rc;
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  TryCompleteAll(1, &request, 0);
  return PMPI_Request_get_status(request, flag, status);
}

}  // extern "C"
