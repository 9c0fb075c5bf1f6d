#include "client/mpi/call_selection.h"

#include <atomic>
#include <mutex>

#include "client/mpi/hand_back_at_once.h"
#include "shm/tables/selection_table_text.h"
#include "shm/tables/table_words.h"

namespace ohio::shim {
namespace {

std::string ShapeText(const SelectionShape& shape) {
  return std::to_string(shape.nodes) + (shape.nodes == 1 ? " node x " : " nodes x ") + std::to_string(shape.ppn) +
         (shape.ppn == 1 ? " rank (" : " ranks (") + SelectedTransportName(shape.transport) + ")";
}

std::string RowText(const SelectionTable& table, int rule) {
  if (rule < 0) return "no row matches";
  return "row " + std::to_string(rule + 1) + ": " + FormatSelectionRule(table.rules[static_cast<size_t>(rule)]);
}

}  // namespace

CallVerdict SelectCall(const CommState& st, SelectedFunction function, uint64_t bytes_per_pair) {
  if (st.selection_always) return CallVerdict{};
  const Selection s = Select(st.table, function, st.shape, bytes_per_pair);
  if (s.serve) return CallVerdict{};
  // The reason names the shape and the row, not the bytes: a program of many sizes (an FFT's
  // uneven transposes) would otherwise get one line of OHIO_STATS per size.
  return CallVerdict{false, std::string("the selection table hands ") + SelectedFunctionName(function) + " on " +
                                ShapeText(st.shape) + " to the MPI library (" + RowText(st.table, s.rule) + ")"};
}

bool HandedToLibraryByTable(CommState* st, const char* function, SelectedFunction selected, uint64_t bytes_per_pair) {
  CommState::KeptVerdict& kept = st->kept_verdicts[static_cast<size_t>(selected)];
  if (kept.function != function || kept.bytes != bytes_per_pair) {
    FlushKeptVerdict(st, kept);
    const CallVerdict verdict = SelectCall(*st, selected, bytes_per_pair);
    Process::Tally& tally = TallyOf(function);  // map nodes stay put: the pointers below hold
    std::atomic<long>* reason_count = nullptr;
    if (!verdict.serve) {
      const std::lock_guard<std::mutex> lock(P().mu);  // another thread may add a reason
      reason_count = &tally.table_reasons[verdict.why];
    }
    kept = CommState::KeptVerdict{function,          IndexOf(function), bytes_per_pair, verdict.serve,
                                  OhioFunctionNumber(function), &tally.handed_back, &tally.by_table, reason_count};
  }
  if (kept.serve) return false;
  // Counted as the calls handed back at once are (client/mpi/hand_back_at_once.h).
  if (++kept.pending >= kFlushEvery) FlushKeptVerdict(st, kept);
  return true;
}

std::optional<CallVerdict> SelectWhateverTheBytes(const CommState& st, SelectedFunction function) {
  if (st.selection_always) return CallVerdict{};
  const std::optional<bool> serve = SelectionWhateverTheBytes(st.table, function, st.shape);
  if (!serve) return std::nullopt;
  if (*serve) return CallVerdict{};
  return CallVerdict{false, std::string("the selection table hands ") + SelectedFunctionName(function) + " on " +
                                ShapeText(st.shape) + " to the MPI library whatever the bytes"};
}

CallVerdict SelectOwnPart(const CommState& st, SelectedFunction function, uint64_t largest_pair_bytes) {
  // The bytes differ from call to call: the reason names the row, so that OHIO_STATS groups the
  // calls of one shape and row under one reason.
  if (st.selection_always) return CallVerdict{};
  const Selection s = Select(st.table, function, st.shape, largest_pair_bytes);
  if (s.serve) return CallVerdict{};
  return CallVerdict{false, std::string("the selection table hands this rank's part of ") +
                                SelectedFunctionName(function) + " on " + ShapeText(st.shape) +
                                " to the MPI library by its largest block to or from one rank (" +
                                RowText(st.table, s.rule) + "): this rank opted out of the call"};
}

CallVerdict SelectNonblockingVector(const CommState& st, SelectedFunction function) {
  if (std::optional<CallVerdict> v = SelectWhateverTheBytes(st, function)) return *v;
  return CallVerdict{false, std::string("the selection table's verdict for ") + SelectedFunctionName(function) +
                                " on " + ShapeText(st.shape) +
                                " depends on the bytes, which differ between ranks, and a rank cannot opt out of a "
                                "nonblocking call alone: the MPI library"};
}

uint64_t PairBytes(bool in_place, int sendcount, MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype) {
  const int count = in_place ? recvcount : sendcount;
  int type_size = 0;
  PMPI_Type_size(in_place ? recvtype : sendtype, &type_size);
  return count > 0 && type_size > 0 ? static_cast<uint64_t>(count) * static_cast<uint64_t>(type_size) : 0;
}

}  // namespace ohio::shim
