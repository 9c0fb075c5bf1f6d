#include "client/mpi/shim/mpi_fortran_requests.h"

#include <mpi.h>

#include <cstddef>
#include <type_traits>
#include <vector>

namespace ohio::shim {
namespace {

// Both MPIs define MPI_Fint as int: count, index and flag arguments are passed on as they are.
static_assert(std::is_same_v<MPI_Fint, int>);
// A Fortran status is the C one's bytes as INTEGERs (MPI_STATUS_SIZE of them) in both MPIs.
static_assert(sizeof(MPI_Status) % sizeof(MPI_Fint) == 0);
constexpr int kStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);

// A Fortran array of request handles as C handles for the call, and back after it (completed
// requests become MPI_REQUEST_NULL, a Start's request the started one).
class CRequests {
 public:
  CRequests(int count, MPI_Fint* fortran) : fortran_(fortran), c_(count > 0 ? count : 0) {
    for (size_t i = 0; i < c_.size(); ++i) c_[i] = PMPI_Request_f2c(fortran_[i]);
  }
  ~CRequests() {
    for (size_t i = 0; i < c_.size(); ++i) fortran_[i] = PMPI_Request_c2f(c_[i]);
  }
  MPI_Request* data() { return c_.data(); }

 private:
  MPI_Fint* fortran_;
  std::vector<MPI_Request> c_;
};

// The Fortran status (or array of `count`) as C statuses for the call, and back after it.
class CStatuses {
 public:
  CStatuses(void* fortran, int count, bool array) : fortran_(fortran) {
    const FortranStatusConvention& f = kFortranStatuses;
    if (array ? f.is_statuses_ignore(fortran) : f.is_status_ignore(fortran)) {
      ignored_ = array ? MPI_STATUSES_IGNORE : MPI_STATUS_IGNORE;
    } else if (!f.c_layout) {
      // Value-initialised: a status the call leaves undefined goes back as zeros, not garbage.
      copies_.resize(count > 0 ? count : 0);
    }
  }
  ~CStatuses() {
    if (ignored_ != nullptr || kFortranStatuses.c_layout) return;
    auto* ints = static_cast<MPI_Fint*>(fortran_);
    for (size_t i = 0; i < copies_.size(); ++i) PMPI_Status_c2f(&copies_[i], ints + i * kStatusInts);
  }
  MPI_Status* data() {
    if (ignored_ != nullptr) return ignored_;
    return kFortranStatuses.c_layout ? static_cast<MPI_Status*>(fortran_) : copies_.data();
  }

 private:
  void* fortran_;
  MPI_Status* ignored_ = nullptr;
  std::vector<MPI_Status> copies_;
};

// A C index (from 0, or MPI_UNDEFINED) as Fortran's (from 1).
void IndexToFortran(MPI_Fint* index) {
  if (*index != MPI_UNDEFINED) ++*index;
}

void IndicesToFortran(const MPI_Fint* outcount, MPI_Fint* indices) {
  if (*outcount == MPI_UNDEFINED) return;
  for (int i = 0; i < *outcount; ++i) ++indices[i];
}

void FlagToFortran(MPI_Fint* flag) { *flag = *flag != 0 ? 1 : 0; }

}  // namespace

void FortranWait(MPI_Fint* request, void* status, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(1, request);
    CStatuses s(status, 1, false);
    rc = MPI_Wait(c.data(), s.data());
  }
  SetFortranError(ierror, rc);
}

void FortranWaitall(const MPI_Fint* count, MPI_Fint* requests, void* statuses, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(*count, requests);
    CStatuses s(statuses, *count, true);
    rc = MPI_Waitall(*count, c.data(), s.data());
  }
  SetFortranError(ierror, rc);
}

void FortranWaitany(const MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, void* status, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(*count, requests);
    CStatuses s(status, 1, false);
    rc = MPI_Waitany(*count, c.data(), index, s.data());
  }
  IndexToFortran(index);
  SetFortranError(ierror, rc);
}

void FortranWaitsome(const MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                     void* statuses, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(*incount, requests);
    CStatuses s(statuses, *incount, true);
    rc = MPI_Waitsome(*incount, c.data(), outcount, indices, s.data());
  }
  IndicesToFortran(outcount, indices);
  SetFortranError(ierror, rc);
}

void FortranTest(MPI_Fint* request, MPI_Fint* flag, void* status, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(1, request);
    CStatuses s(status, 1, false);
    rc = MPI_Test(c.data(), flag, s.data());
  }
  FlagToFortran(flag);
  SetFortranError(ierror, rc);
}

void FortranTestall(const MPI_Fint* count, MPI_Fint* requests, MPI_Fint* flag, void* statuses, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(*count, requests);
    CStatuses s(statuses, *count, true);
    rc = MPI_Testall(*count, c.data(), flag, s.data());
  }
  FlagToFortran(flag);
  SetFortranError(ierror, rc);
}

void FortranTestany(const MPI_Fint* count, MPI_Fint* requests, MPI_Fint* index, MPI_Fint* flag, void* status,
                    MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(*count, requests);
    CStatuses s(status, 1, false);
    rc = MPI_Testany(*count, c.data(), index, flag, s.data());
  }
  IndexToFortran(index);
  FlagToFortran(flag);
  SetFortranError(ierror, rc);
}

void FortranTestsome(const MPI_Fint* incount, MPI_Fint* requests, MPI_Fint* outcount, MPI_Fint* indices,
                     void* statuses, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(*incount, requests);
    CStatuses s(statuses, *incount, true);
    rc = MPI_Testsome(*incount, c.data(), outcount, indices, s.data());
  }
  IndicesToFortran(outcount, indices);
  SetFortranError(ierror, rc);
}

void FortranRequestGetStatus(const MPI_Fint* request, MPI_Fint* flag, void* status, MPI_Fint* ierror) {
  int rc;
  {
    CStatuses s(status, 1, false);
    rc = MPI_Request_get_status(PMPI_Request_f2c(*request), flag, s.data());
  }
  FlagToFortran(flag);
  SetFortranError(ierror, rc);
}

void FortranRequestFree(MPI_Fint* request, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(1, request);
    rc = MPI_Request_free(c.data());
  }
  SetFortranError(ierror, rc);
}

void FortranCancel(const MPI_Fint* request, MPI_Fint* ierror) {
  MPI_Request c = PMPI_Request_f2c(*request);
  SetFortranError(ierror, MPI_Cancel(&c));
}

void FortranFinalize(MPI_Fint* ierror) { SetFortranError(ierror, MPI_Finalize()); }

void FortranStart(MPI_Fint* request, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(1, request);
    rc = MPI_Start(c.data());
  }
  SetFortranError(ierror, rc);
}

void FortranStartall(const MPI_Fint* count, MPI_Fint* requests, MPI_Fint* ierror) {
  int rc;
  {
    CRequests c(*count, requests);
    rc = MPI_Startall(*count, c.data());
  }
  SetFortranError(ierror, rc);
}

}  // namespace ohio::shim
