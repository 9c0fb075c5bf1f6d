/* Preloaded into an MPI program by tests/mpi/selection/hand_back_cost_test.cc: counts the locks that ohio's
 * own code (libohio_mpi, coll/ohio, libohio) takes while the program holds a window open
 * (tests/mpi/selection/hand_back_check.c). Every pthread lock function is passed on to the C library; a
 * call is ohio's when the code that called it lies in an object whose file name says ohio. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static atomic_int window_open;
static atomic_long locks_in_window;

void ohio_lock_window(int open) { atomic_store(&window_open, open); }
long ohio_locks_in_window(void) { return atomic_load(&locks_in_window); }

static void count_if_ohio(const void* caller) {
  if (!atomic_load_explicit(&window_open, memory_order_relaxed)) return;
  Dl_info info;
  if (dladdr(caller, &info) != 0 && info.dli_fname != NULL &&
      (strstr(info.dli_fname, "libohio") != NULL || strstr(info.dli_fname, "mca_coll_ohio") != NULL)) {
    atomic_fetch_add(&locks_in_window, 1);
  }
}

#define PASS_ON(name, type)                                       \
  int name(type* lock) {                                          \
    static int (*next)(type*);                                    \
    if (next == NULL) next = (int (*)(type*))dlsym(RTLD_NEXT, #name); \
    count_if_ohio(__builtin_return_address(0));                   \
    return next(lock);                                            \
  }

PASS_ON(pthread_mutex_lock, pthread_mutex_t)
PASS_ON(pthread_mutex_trylock, pthread_mutex_t)
PASS_ON(pthread_rwlock_rdlock, pthread_rwlock_t)
PASS_ON(pthread_rwlock_wrlock, pthread_rwlock_t)
PASS_ON(pthread_spin_lock, pthread_spinlock_t)
