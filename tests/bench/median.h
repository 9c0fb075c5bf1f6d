/* The median of n doubles (sorts them in place): one definition for the MPI benchmarks in C. */
#ifndef OHIO_TESTS_BENCH_MEDIAN_H_
#define OHIO_TESTS_BENCH_MEDIAN_H_

#include <stdlib.h>

static inline int ohio_bench_by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static inline double ohio_bench_median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), ohio_bench_by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif  // OHIO_TESTS_BENCH_MEDIAN_H_
