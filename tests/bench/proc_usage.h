/* What a process has cost so far, from the kernel's own accounting: the one reader the
 * benchmarks share (alltoall_bench.cc, mpi_alltoall_bench.c), so that every table's CPU, context
 * switch and frame columns mean the same thing. C, so that both can include it.
 *
 * A benchmark samples each process at the start and the end of a timed window and reports the
 * differences; any value it could not read is negative, and is printed as "-", never as 0. */
#ifndef OHIO_TESTS_BENCH_PROC_USAGE_H_
#define OHIO_TESTS_BENCH_PROC_USAGE_H_

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  double cpu_us;       /* user + system time of every thread of the process, µs */
  double ctx_switches; /* voluntary + involuntary context switches of its threads alive now */
} ohio_bench_usage;

/* The process CPU-time clock is the kernel's utime + stime of /proc/<pid>/stat (all threads,
 * exited ones too) at nanosecond resolution; /proc/<pid>/stat itself counts in clock ticks
 * (10 ms), too coarse for a window of a few milliseconds, so it is only the fallback. */
static inline double ohio_bench_cpu_us(pid_t pid) {
  clockid_t id;
  struct timespec ts;
  if (clock_getcpuclockid(pid, &id) == 0 && clock_gettime(id, &ts) == 0) return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15. */
  char* p = strrchr(buf, ')');
  unsigned long long utime = 0, stime = 0;
  if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return -1;
  return (double)(utime + stime) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

/* /proc/<pid>/status counts the switches of one thread only, so every thread's are summed. */
static inline double ohio_bench_ctx_switches(pid_t pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
  DIR* d = opendir(path);
  if (d == NULL) return -1;
  double total = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char status[320], line[256];
    snprintf(status, sizeof(status), "/proc/%d/task/%s/status", (int)pid, e->d_name);
    FILE* f = fopen(status, "r");
    if (f == NULL) continue; /* the thread exited meanwhile */
    while (fgets(line, sizeof(line), f) != NULL) {
      if (strncmp(line, "voluntary_ctxt_switches:", 24) == 0) total += strtod(line + 24, NULL);
      if (strncmp(line, "nonvoluntary_ctxt_switches:", 27) == 0) total += strtod(line + 27, NULL);
    }
    fclose(f);
  }
  closedir(d);
  return total;
}

/* The two ends of a window: each reads the cheap, exact clock on the window's side of the slower
 * walk through /proc, so the window's CPU time holds as little of the sampling as it can. */
static inline ohio_bench_usage ohio_bench_usage_start(pid_t pid) {
  ohio_bench_usage u;
  u.ctx_switches = ohio_bench_ctx_switches(pid);
  u.cpu_us = ohio_bench_cpu_us(pid);
  return u;
}

static inline ohio_bench_usage ohio_bench_usage_end(pid_t pid) {
  ohio_bench_usage u;
  u.cpu_us = ohio_bench_cpu_us(pid);
  u.ctx_switches = ohio_bench_ctx_switches(pid);
  return u;
}

/* *into += after - before, or -1 for good once any of them could not be read. */
static inline void ohio_bench_add(double* into, double before, double after) {
  if (*into < 0 || before < 0 || after < 0) {
    *into = -1;
  } else {
    *into += after - before;
  }
}

/* Packets sent so far by interface ifname of the network namespace process pid is in (0: the
 * caller's), from /proc/<pid>/net/dev; -1 if that namespace has no such interface. /sys/class/net
 * would show the namespace /sys was mounted in, not the process's. */
static inline double ohio_bench_tx_packets(pid_t pid, const char* ifname) {
  char path[64], line[512];
  if (pid == 0) {
    snprintf(path, sizeof(path), "/proc/self/net/dev");
  } else {
    snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)pid);
  }
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  double tx = -1;
  size_t len = strlen(ifname);
  while (fgets(line, sizeof(line), f) != NULL) {
    const char* p = line;
    while (*p == ' ') ++p;
    if (strncmp(p, ifname, len) != 0 || p[len] != ':') continue;
    /* receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets */
    unsigned long long v[10];
    if (sscanf(p + len + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5], &v[6], &v[7], &v[8], &v[9]) == 10) {
      tx = (double)v[9];
    }
    break;
  }
  fclose(f);
  return tx;
}

/* The data frames a daemon's transport has sent so far: the "data_frames_sent" counter of
 * `OHIOCTL --socket ADMIN_SOCKET --json counters`; -1 if the command fails or its counters have
 * no such field (older daemons). Runs a process: keep it out of timed windows. In two halves, so
 * that many daemons are asked at once (ohio_bench_daemon_frames_ask for each, then _read). */
static inline FILE* ohio_bench_daemon_frames_ask(const char* ohioctl, const char* admin_socket) {
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "'%s' --socket '%s' --json counters 2>/dev/null", ohioctl, admin_socket);
  return popen(cmd, "r");
}

static inline double ohio_bench_daemon_frames_read(FILE* p) {
  if (p == NULL) return -1;
  size_t cap = 1 << 18, n = 0, got;
  char* out = (char*)malloc(cap + 1);
  if (out == NULL) {
    pclose(p);
    return -1;
  }
  while (n < cap && (got = fread(out + n, 1, cap - n, p)) > 0) n += got;
  out[n] = '\0';
  double frames = -1;
  const char* at = strstr(out, "\"data_frames_sent\"");
  if (at != NULL && (at = strchr(at, ':')) != NULL) frames = strtod(at + 1, NULL);
  free(out);
  if (pclose(p) != 0) return -1;
  return frames;
}

static inline double ohio_bench_daemon_frames(const char* ohioctl, const char* admin_socket) {
  return ohio_bench_daemon_frames_read(ohio_bench_daemon_frames_ask(ohioctl, admin_socket));
}

#endif /* OHIO_TESTS_BENCH_PROC_USAGE_H_ */
