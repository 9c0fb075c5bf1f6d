// Checks client/mpi/mpi_type_layout against the MPI library itself: for every combiner the shim
// serves (and some nestings), packing 3 elements run by run must give exactly MPI_Pack's bytes,
// and unpacking them must write exactly what MPI_Unpack writes (the bytes a type skips left as
// they were). Types it must not serve must have no layout. Run with one rank:
//   mpirun -np 1 type_layout_check     prints "ok <type>" per type, then "all N types ok".
#include <mpi.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "client/mpi/mpi_type_layout.h"

namespace {

constexpr int kCount = 3;
// Types may reach before their start (negative displacements): the buffer starts well before.
constexpr MPI_Aint kSlack = 4096;

bool Compare(const char* name, const char* what, const std::vector<unsigned char>& want,
             const std::vector<unsigned char>& got) {
  if (want == got) return true;
  size_t at = 0;
  while (at < want.size() && at < got.size() && want[at] == got[at]) ++at;
  std::printf("FAIL %s: %s differs from the MPI library's at byte %zu (of %zu / %zu)\n", name, what, at, want.size(),
              got.size());
  return false;
}

bool CheckServed(const char* name, MPI_Datatype type) {
  int ni, na, nd, combiner;
  MPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  const bool derived = combiner != MPI_COMBINER_NAMED;
  if (derived) MPI_Type_commit(&type);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(type, &lb, &extent);
  const size_t span = static_cast<size_t>(2 * kSlack + kCount * (extent > 0 ? extent : -extent) + 4096);
  std::vector<unsigned char> source(span);
  for (size_t i = 0; i < span; ++i) source[i] = static_cast<unsigned char>(i * 7 + i / 251);
  const unsigned char* typed = source.data() + kSlack;

  int packed_bytes = 0;
  MPI_Pack_size(kCount, type, MPI_COMM_WORLD, &packed_bytes);
  std::vector<unsigned char> by_mpi(packed_bytes);
  int position = 0;
  MPI_Pack(typed, kCount, type, by_mpi.data(), packed_bytes, &position, MPI_COMM_WORLD);
  by_mpi.resize(position);

  const char* why = nullptr;
  const ohio::TypeLayout* layout = ohio::LayoutOf(type, &why);
  bool ok = layout != nullptr;
  if (!ok) std::printf("FAIL %s: no layout (%s)\n", name, why);
  if (ok) {
    std::vector<unsigned char> by_runs(static_cast<size_t>(kCount * layout->size));
    ohio::PackRuns(*layout, typed, kCount, by_runs.data());
    ok = Compare(name, "packed", by_mpi, by_runs);
    // Unpack into buffers that start out the same and must end the same.
    std::vector<unsigned char> unpacked_mpi(span, 0xEE), unpacked_runs(span, 0xEE);
    position = 0;
    MPI_Unpack(by_mpi.data(), static_cast<int>(by_mpi.size()), &position, unpacked_mpi.data() + kSlack, kCount, type,
               MPI_COMM_WORLD);
    ohio::UnpackRuns(*layout, by_mpi.data(), kCount, unpacked_runs.data() + kSlack);
    ok = ok && Compare(name, "unpacked", unpacked_mpi, unpacked_runs);
    // The cache answers the same layout the second time (and for a dup, a layout of its own).
    ok = ok && ohio::LayoutOf(type, &why) == layout;
  }
  if (ok) std::printf("ok %s (%zu runs)\n", name, layout->runs.size());
  if (derived) MPI_Type_free(&type);
  return ok;
}

bool CheckRefused(const char* name, MPI_Datatype type, bool free_it) {
  const char* why = nullptr;
  const bool refused = ohio::LayoutOf(type, &why) == nullptr;
  if (refused) {
    std::printf("ok %s refused (%s)\n", name, why);
  } else {
    std::printf("FAIL %s: has a layout, but the shim must not serve it\n", name);
  }
  if (free_it) MPI_Type_free(&type);
  return refused;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int checked = 0, failed = 0;
  auto served = [&](const char* name, MPI_Datatype t) {
    ++checked;
    failed += CheckServed(name, t) ? 0 : 1;
  };
  MPI_Datatype t, u, v;

  served("int", MPI_INT);
  served("double", MPI_DOUBLE);
  MPI_Type_dup(MPI_INT, &t);
  served("dup", t);
  MPI_Type_contiguous(5, MPI_SHORT, &t);
  served("contiguous", t);
  MPI_Type_vector(4, 2, 5, MPI_INT, &t);
  served("vector", t);
  MPI_Type_vector(3, 1, -2, MPI_DOUBLE, &t);
  served("vector, negative stride", t);
  MPI_Type_create_hvector(3, 2, 20, MPI_SHORT, &t);
  served("hvector", t);
  {
    int lengths[] = {2, 1, 3}, displs[] = {5, 0, 9};
    MPI_Type_indexed(3, lengths, displs, MPI_INT, &t);
    served("indexed, out of order", t);
    MPI_Aint hdispls[] = {40, 0, 13};
    MPI_Type_create_hindexed(3, lengths, hdispls, MPI_CHAR, &t);
    served("hindexed", t);
    int bdispls[] = {7, 1, 4};
    MPI_Type_create_indexed_block(3, 2, bdispls, MPI_FLOAT, &t);
    served("indexed_block", t);
    MPI_Type_create_hindexed_block(3, 2, hdispls, MPI_SHORT, &t);
    served("hindexed_block", t);
  }
  {
    struct Record {
      char tag;
      double x;
      int n[3];
    };
    int lengths[] = {1, 1, 3};
    MPI_Aint displs[] = {offsetof(Record, tag), offsetof(Record, x), offsetof(Record, n)};
    MPI_Datatype types[] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(3, lengths, displs, types, &u);
    MPI_Type_create_resized(u, 0, sizeof(Record), &t);
    MPI_Type_free(&u);
    served("struct, resized", t);
  }
  {
    int sizes[] = {5, 6, 4}, subsizes[] = {2, 3, 2}, starts[] = {1, 2, 1};
    MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &t);
    served("subarray C", t);
    MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t);
    served("subarray Fortran", t);
  }
  MPI_Type_vector(2, 1, 3, MPI_INT, &u);
  MPI_Type_create_resized(u, -8, 40, &t);
  MPI_Type_free(&u);
  served("resized, negative lower bound", t);
  {
    // A vector of structs of vectors.
    MPI_Type_vector(2, 1, 2, MPI_SHORT, &u);
    int lengths[] = {1, 2};
    MPI_Aint displs[] = {0, 16};
    MPI_Datatype types[] = {MPI_DOUBLE, u};
    MPI_Type_create_struct(2, lengths, displs, types, &v);
    MPI_Type_free(&u);
    MPI_Type_vector(3, 2, 3, v, &t);
    MPI_Type_free(&v);
    served("vector of struct of vector", t);
  }

  // Pair types are predefined, so their holes cannot be seen: none is served.
  ++checked;
  failed += CheckRefused("short_int", MPI_SHORT_INT, false) ? 0 : 1;
  ++checked;
  failed += CheckRefused("double_int", MPI_DOUBLE_INT, false) ? 0 : 1;
  {
    int gsizes[] = {8}, distribs[] = {MPI_DISTRIBUTE_BLOCK}, dargs[] = {MPI_DISTRIBUTE_DFLT_DARG}, psizes[] = {2};
    MPI_Type_create_darray(2, 1, 1, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &t);
    MPI_Type_commit(&t);
    ++checked;
    failed += CheckRefused("darray", t, true) ? 0 : 1;
  }

  if (failed == 0) std::printf("all %d types ok\n", checked);
  std::fflush(stdout);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}
