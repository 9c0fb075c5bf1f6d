#include "daemon/engine/segment_holders.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace ohio {
namespace {

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
};

// Each entry of directory `path` but "." and ".."; false if it cannot be opened (errno set).
template <typename Fn>
bool ForEachEntry(const std::string& path, Fn fn) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return false;
  while (const dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0 && !fn(e->d_name)) break;
  }
  closedir(d);
  return true;
}

// A mapping line of /proc/PID/maps: "start-end perms offset major:minor inode path".
bool MapsLineIs(const std::string& line, const FileId& id) {
  std::istringstream in(line);
  std::string range, perms, offset, device;
  unsigned long long inode = 0;
  if (!(in >> range >> perms >> offset >> device >> inode)) return false;
  unsigned major_dev = 0, minor_dev = 0;
  if (std::sscanf(device.c_str(), "%x:%x", &major_dev, &minor_dev) != 2) return false;
  return inode == id.ino && makedev(major_dev, minor_dev) == id.dev;
}

enum class Look { kNo, kYes, kUnreadable };

Look Maps(const std::string& pid, const FileId& id) {
  std::ifstream maps("/proc/" + pid + "/maps");
  if (!maps) return errno == ENOENT || errno == ESRCH ? Look::kNo : Look::kUnreadable;
  for (std::string line; std::getline(maps, line);) {
    // Only memfds can be the segment; their lines name "/memfd:".
    if (line.find("/memfd:") != std::string::npos && MapsLineIs(line, id)) return Look::kYes;
  }
  return Look::kNo;
}

Look Descriptors(const std::string& pid, const FileId& id) {
  const std::string dir = "/proc/" + pid + "/fd";
  Look found = Look::kNo;
  const bool opened = ForEachEntry(dir, [&](const char* name) {
    const std::string path = dir + "/" + name;
    char link[64];
    const ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
    if (n <= 0) return true;
    link[n] = '\0';
    if (std::strncmp(link, "/memfd:", 7) != 0) return true;
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && st.st_ino == id.ino && st.st_dev == id.dev) found = Look::kYes;
    return found == Look::kNo;
  });
  if (!opened) return errno == ENOENT || errno == ESRCH ? Look::kNo : Look::kUnreadable;
  return found;
}

// When process `pid` started, in clock ticks after boot (field 22 of /proc/PID/stat, which
// anyone may read); 0 if unknown.
unsigned long long StartTicks(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t comm_end = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (comm_end == std::string::npos) return 0;
  std::istringstream fields(stat.substr(comm_end + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

}  // namespace

std::optional<std::string> OtherSegmentHolder(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return std::string("the segment cannot be examined: ") + std::strerror(errno);
  const FileId id{st.st_dev, st.st_ino};
  const std::string self = std::to_string(getpid());
  const unsigned long long self_start = StartTicks(self);
  std::optional<std::string> holder;
  const bool listed = ForEachEntry("/proc", [&](const char* name) {
    if (name[0] < '0' || name[0] > '9' || self == name) return true;
    const std::string pid = name;
    Look look = Maps(pid, id);
    const char* what = "maps it";
    if (look == Look::kNo) {
      look = Descriptors(pid, id);
      what = "holds its descriptor";
    }
    if (look == Look::kYes) holder = "pid " + pid + " " + what;
    // A process ohiod may not examine (a container's init, say, without CAP_SYS_PTRACE) that
    // was running before ohiod started cannot have inherited the segment from a rank: it could
    // hold it only if a rank sent it the descriptor on purpose. A younger one might be a child.
    const int why = errno;
    if (look == Look::kUnreadable && (self_start == 0 || StartTicks(pid) >= self_start)) {
      holder = "pid " + pid + " cannot be examined (" + std::strerror(why) + ")";
    }
    return !holder;
  });
  if (!listed) return std::string("/proc cannot be read: ") + std::strerror(errno);
  return holder;
}

}  // namespace ohio
