// A hostile process of another user, run beside a job (in its container or another): tries
// every way /proc offers at the memory and the shared segments of the processes it is given
// (the job's ranks, ohiod): opening /proc/<pid>/mem, reading its memory with process_vm_readv,
// opening the memfds behind /proc/<pid>/fd and /proc/<pid>/map_files. Prints one line per try,
// "pid P <way>: refused (<errno text>)" or "pid P <way>: REACHED <what>", and exits 0 only if
// every try was refused.
#include <dirent.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool reached_any = false;

void Refused(pid_t pid, const char* way, int error) {
  std::printf("pid %d %s: refused (%s)\n", static_cast<int>(pid), way, std::strerror(error));
}

void Reached(pid_t pid, const char* way, const std::string& what) {
  std::printf("pid %d %s: REACHED %s\n", static_cast<int>(pid), way, what.c_str());
  reached_any = true;
}

void TryMem(pid_t pid) {
  const int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Refused(pid, "mem", errno);
  close(fd);
  Reached(pid, "mem", "an open /proc/<pid>/mem");
}

void TryReadv(pid_t pid) {
  // The permission is checked before any address: a page that is never mapped (the first)
  // says EFAULT only to a process allowed to read.
  char byte = 0;
  struct iovec local = {&byte, 1};
  struct iovec remote = {reinterpret_cast<void*>(0x1000), 1};
  if (process_vm_readv(pid, &local, 1, &remote, 1, 0) < 0 && errno != EFAULT) return Refused(pid, "readv", errno);
  Reached(pid, "readv", "process_vm_readv access");
}

// Every memfd a directory of links (fd, map_files) leads to, opened for reading and writing.
void TryLinks(pid_t pid, const char* way, const std::string& dir_name) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/" + dir_name;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Refused(pid, way, errno);
  int memfds = 0;
  int refusal = 0;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = dir + "/" + e->d_name;
    char link[256];
    const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
    if (n < 0) {
      refusal = errno;
      continue;
    }
    link[n] = '\0';
    if (std::strncmp(link, "/memfd:", 7) != 0) continue;
    ++memfds;
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      close(fd);
      closedir(d);
      return Reached(pid, way, link);
    }
    refusal = errno;
  }
  closedir(d);
  if (refusal != 0) return Refused(pid, way, refusal);
  // Listed, but no memfd there to open: nothing reached, and nothing tried either.
  std::printf("pid %d %s: no memfd listed\n", static_cast<int>(pid), way);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("segment_intruder: tries to reach other processes' memory and segments through /proc");
  std::vector<pid_t> pids;
  app.add_option("--pid", pids, "processes to try, as pids of this process's PID namespace")->required();
  CLI11_PARSE(app, argc, argv);
  for (pid_t pid : pids) {
    TryMem(pid);
    TryReadv(pid);
    TryLinks(pid, "fd", "fd");
    TryLinks(pid, "map_files", "map_files");
  }
  std::fflush(stdout);
  return reached_any ? 1 : 0;
}
