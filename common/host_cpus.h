// How many CPUs the host offers this process: the CPUs of its affinity mask, bounded by its
// cgroup's CPU quota when it has one (a container or a Slurm job step limited to 1.5 CPUs runs as
// if it had 1.5 CPUs, whatever its mask says). What "a core to spare" is measured against, by
// ohiod's engine (its node's ranks plus itself) and by ranks (common/spin_mode.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ohio {

// The CPUs of this process's affinity mask, at least 1.
uint32_t UsableCpus();

// UsableCpus(), bounded by the cgroup's quota; always > 0.
double HostCpus();

// ohiod's `cpus` setting as CPUs: "auto" is HostCpus(), anything else a number (validated by the
// config parser).
double CpusOfSetting(const std::string& setting);

// A cgroup v2 `cpu.max` file ("QUOTA PERIOD" or "max PERIOD") as CPUs; nullopt for no limit or text
// that is not such a file.
std::optional<double> CpusOfCpuMax(const std::string& text);
// cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` as CPUs; nullopt for no limit (-1).
std::optional<double> CpusOfCfsQuota(const std::string& quota, const std::string& period);

}  // namespace ohio
