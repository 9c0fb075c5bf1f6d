#include "client/mpi/mpi_type_layout.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

namespace ohio {
namespace {

// Appends a run at `offset`, merged into the last one when they touch. False past the limit.
bool Append(TypeLayout* out, MPI_Aint offset, MPI_Aint length) {
  if (length == 0) return true;
  if (!out->runs.empty() && out->runs.back().offset + out->runs.back().length == offset) {
    out->runs.back().length += length;
  } else {
    if (out->runs.size() == kMaxTypeRuns) return false;
    out->runs.push_back({offset, length});
  }
  out->size += length;
  return true;
}

// `count` consecutive elements of `child` starting at `base`.
bool AppendElements(TypeLayout* out, const TypeLayout& child, MPI_Aint base, MPI_Aint count) {
  for (MPI_Aint e = 0; e < count; ++e) {
    for (const TypeRun& r : child.runs) {
      if (!Append(out, base + e * child.extent + r.offset, r.length)) return false;
    }
  }
  return true;
}

// The decoded arguments a type was made with (MPI_Type_get_contents). Datatypes the MPI hands
// back that are not predefined belong to the caller: freed here.
struct Contents {
  std::vector<int> ints;
  std::vector<MPI_Aint> addresses;
  std::vector<MPI_Datatype> types;
  ~Contents() {
    for (MPI_Datatype& t : types) {
      int ni, na, nd, combiner;
      PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
      if (combiner != MPI_COMBINER_NAMED) PMPI_Type_free(&t);
    }
  }
};

bool FlattenInto(MPI_Datatype type, TypeLayout* out, const char** why);

// Flattens a child type into its own layout (with its extent), for replication.
bool Child(MPI_Datatype type, TypeLayout* child, const char** why) {
  if (!FlattenInto(type, child, why)) return false;
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  child->extent = extent;
  return true;
}

bool Subarray(const Contents& c, TypeLayout* out, const char** why) {
  const int n = c.ints[0];
  const int* sizes = &c.ints[1];
  const int* subsizes = &c.ints[1 + n];
  const int* starts = &c.ints[1 + 2 * n];
  const bool fortran = c.ints[1 + 3 * n] == MPI_ORDER_FORTRAN;
  TypeLayout child;
  if (!Child(c.types[0], &child, why)) return false;
  // Dimensions from slowest to fastest varying, with the element stride of each.
  std::vector<int> dims(n);
  for (int i = 0; i < n; ++i) dims[i] = fortran ? n - 1 - i : i;
  std::vector<MPI_Aint> stride(n, 1);
  for (int i = n - 2; i >= 0; --i) stride[dims[i]] = stride[dims[i + 1]] * sizes[dims[i + 1]];
  for (int d = 0; d < n; ++d) {
    if (subsizes[d] == 0) return true;
  }
  std::vector<int> index(n, 0);  // within the subarray, by dimension
  const int fastest = dims[n - 1];
  for (;;) {
    MPI_Aint element = 0;
    for (int d = 0; d < n; ++d) element += (starts[d] + index[d]) * stride[d];
    // A row of the fastest dimension is consecutive elements.
    if (!AppendElements(out, child, element * child.extent, subsizes[fastest])) {
      *why = "a datatype with too many holes";
      return false;
    }
    int i = n - 2;
    for (; i >= 0; --i) {
      const int d = dims[i];
      if (++index[d] < subsizes[d]) break;
      index[d] = 0;
    }
    if (i < 0) return true;
  }
}

bool FlattenInto(MPI_Datatype type, TypeLayout* out, const char** why) {
  int ni = 0, na = 0, nd = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
    *why = "a datatype the MPI library cannot describe";
    return false;
  }
  if (combiner == MPI_COMBINER_NAMED) {
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    PMPI_Type_size(type, &size);
    PMPI_Type_get_extent(type, &lb, &extent);
    if (lb != 0 || extent != size) {
      *why = "a predefined datatype with holes (a pair type)";
      return false;
    }
    return Append(out, 0, size);
  }
  Contents c;
  c.ints.resize(ni);
  c.addresses.resize(na);
  c.types.resize(nd);
  PMPI_Type_get_contents(type, ni, na, nd, c.ints.data(), c.addresses.data(), c.types.data());
  TypeLayout child;
  auto too_many = [why] {
    *why = "a datatype with too many holes";
    return false;
  };
  switch (combiner) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:  // the same data; only the extent differs, taken by the caller
      return FlattenInto(c.types[0], out, why);
    case MPI_COMBINER_CONTIGUOUS:
      if (!Child(c.types[0], &child, why)) return false;
      return AppendElements(out, child, 0, c.ints[0]) || too_many();
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR: {
      if (!Child(c.types[0], &child, why)) return false;
      const bool bytes = combiner == MPI_COMBINER_HVECTOR;
      const MPI_Aint stride = bytes ? c.addresses[0] : c.ints[2] * child.extent;
      for (int i = 0; i < c.ints[0]; ++i) {
        if (!AppendElements(out, child, i * stride, c.ints[1])) return too_many();
      }
      return true;
    }
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK: {
      if (!Child(c.types[0], &child, why)) return false;
      // MPI_Type_get_contents gives ints = count, the block lengths (one for every block of the
      // _BLOCK kinds), then the displacements in elements (the h kinds give bytes in addresses).
      const int count = c.ints[0];
      const bool one_length = combiner == MPI_COMBINER_INDEXED_BLOCK || combiner == MPI_COMBINER_HINDEXED_BLOCK;
      const bool bytes = combiner == MPI_COMBINER_HINDEXED || combiner == MPI_COMBINER_HINDEXED_BLOCK;
      const int first_displacement = one_length ? 2 : 1 + count;
      for (int i = 0; i < count; ++i) {
        const int length = one_length ? c.ints[1] : c.ints[1 + i];
        const MPI_Aint at = bytes ? c.addresses[i] : c.ints[first_displacement + i] * child.extent;
        if (!AppendElements(out, child, at, length)) return too_many();
      }
      return true;
    }
    case MPI_COMBINER_STRUCT: {
      const int count = c.ints[0];
      for (int i = 0; i < count; ++i) {
        TypeLayout member;
        if (!Child(c.types[i], &member, why)) return false;
        if (!AppendElements(out, member, c.addresses[i], c.ints[1 + i])) return too_many();
      }
      return true;
    }
    case MPI_COMBINER_SUBARRAY:
      return Subarray(c, out, why);
    default:
      *why = "a datatype built in a way ohio does not serve (darray, Fortran or deprecated)";
      return false;
  }
}

struct Cached {
  bool ok = false;
  const char* why = nullptr;
  TypeLayout layout;
};

int DeleteCached(MPI_Datatype, int, void* attribute, void*) {
  delete static_cast<Cached*>(attribute);
  return MPI_SUCCESS;
}

Cached* Compute(MPI_Datatype type) {
  auto* c = new Cached();
  c->ok = FlattenType(type, &c->layout, &c->why);
  return c;
}

}  // namespace

bool FlattenType(MPI_Datatype type, TypeLayout* out, const char** why) {
  *out = TypeLayout{};
  if (!FlattenInto(type, out, why)) return false;
  int size = 0;
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_size(type, &size);
  PMPI_Type_get_extent(type, &lb, &extent);
  out->extent = extent;
  if (out->size != size) {  // overlapping entries: a send type MPI allows, not ours to reorder
    *why = "a datatype whose entries overlap";
    return false;
  }
  return true;
}

const TypeLayout* LayoutOf(MPI_Datatype type, const char** why) {
  int ni, na, nd, combiner;
  PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  Cached* c = nullptr;
  // Threads (MPI_THREAD_MULTIPLE) may ask for one type's layout at once: the look-up and the
  // store of a computed layout are one step under this lock (two threads setting the attribute
  // would have the second delete the layout the first returned). It guards no wait: the
  // computation asks the library about the type, locally.
  static std::mutex mu;
  const std::lock_guard<std::mutex> lock(mu);
  if (combiner == MPI_COMBINER_NAMED) {
    // Predefined types carry no attributes everywhere: a table of their own, never freed.
    static std::map<MPI_Datatype, Cached*> named;
    Cached*& slot = named[type];
    if (slot == nullptr) slot = Compute(type);
    c = slot;
  } else {
    static const int keyval = [] {
      int k = MPI_KEYVAL_INVALID;
      PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, DeleteCached, &k, nullptr);
      return k;
    }();
    void* attribute = nullptr;
    int found = 0;
    PMPI_Type_get_attr(type, keyval, &attribute, &found);
    if (found) {
      c = static_cast<Cached*>(attribute);
    } else {
      c = Compute(type);
      PMPI_Type_set_attr(type, keyval, c);
    }
  }
  if (!c->ok) {
    *why = c->why;
    return nullptr;
  }
  return &c->layout;
}

void PackRuns(const TypeLayout& layout, const void* typed, MPI_Aint count, void* packed) {
  auto* out = static_cast<uint8_t*>(packed);
  const auto* base = static_cast<const uint8_t*>(typed);
  if (layout.contiguous()) {
    std::memcpy(out, base, static_cast<size_t>(count * layout.size));
    return;
  }
  for (MPI_Aint e = 0; e < count; ++e, base += layout.extent) {
    for (const TypeRun& r : layout.runs) {
      std::memcpy(out, base + r.offset, static_cast<size_t>(r.length));
      out += r.length;
    }
  }
}

void UnpackRuns(const TypeLayout& layout, const void* packed, MPI_Aint count, void* typed) {
  const auto* in = static_cast<const uint8_t*>(packed);
  auto* base = static_cast<uint8_t*>(typed);
  if (layout.contiguous()) {
    std::memcpy(base, in, static_cast<size_t>(count * layout.size));
    return;
  }
  for (MPI_Aint e = 0; e < count; ++e, base += layout.extent) {
    for (const TypeRun& r : layout.runs) {
      std::memcpy(base + r.offset, in, static_cast<size_t>(r.length));
      in += r.length;
    }
  }
}

}  // namespace ohio
