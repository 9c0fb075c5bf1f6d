// Why a call of a served MPI function went to the MPI library instead of ohio, as ohiod counts
// it: every rank of a communicator decides a call alike, so its node's local rank 0 counts it in
// the group's segment (CallStats::handed_back) and ohiod folds that into its counters, which
// ohioctl and the metrics show by function and reason. The numbers are ohio.h's
// OHIO_HANDED_BACK_* and OHIO_FUNCTION_* (the shim passes them through ohio_count_handed_back).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ohio {

// The served MPI functions, in the selection table's order (shm/tables/selection_table.h
// SelectedFunction): MPI_Alltoall_init's starts count as ialltoall.
constexpr size_t kHandedBackFunctions = 5;
// Why: the selection table's verdict, reached alike on every rank; a rank opted out of the call
// (its datatype, its sizes, or its own bytes by the selection table); OHIO_IALLTOALL_MIN_BYTES;
// ohio cannot serve the call's shape (OHIO_ERR_NOT_SUPPORTED).
enum class HandBackReason : uint32_t { kSelectionTable, kRankOptedOut, kIalltoallMinBytes, kNotSupported };
constexpr size_t kHandBackReasons = 4;

inline const char* HandedBackFunctionName(size_t function) {
  static constexpr const char* kNames[kHandedBackFunctions] = {"alltoall", "alltoallv", "alltoallw", "ialltoall",
                                                               "ialltoallv"};
  return function < kHandedBackFunctions ? kNames[function] : "unknown";
}

inline const char* HandBackReasonName(HandBackReason reason) {
  switch (reason) {
    case HandBackReason::kSelectionTable: return "selection_table";
    case HandBackReason::kRankOptedOut: return "rank_opted_out";
    case HandBackReason::kIalltoallMinBytes: return "ialltoall_min_bytes";
    case HandBackReason::kNotSupported: return "not_supported";
  }
  return "unknown";
}

}  // namespace ohio
