"""One transform's cost in a Python FFT program (Debian's mpi4py-fft over mpi4py): a 3-D
real-to-complex transform of an N x N x N array on a 2-D pencil decomposition, whose transposes are
MPI all-to-alls on two subcommunicators, forward and back. mpi4py initialises MPI at its default
thread level (MPI_THREAD_MULTIPLE), as every mpi4py program does.

After WARMUP pairs, each of ITERATIONS forward+backward pairs is timed between barriers; a pair's
time is the slowest rank's. Prints one line, read by tests/bench/mpi4py_fft_compare.sh:
  "fft n N ranks P pairs I median_us T cpu_us_per_pair C switches_per_pair S"
with the median over the pairs, and the CPU time (user + system) and context switches (voluntary
and involuntary) of every rank summed, per pair.

usage: mpi4py_fft_bench.py N ITERATIONS [WARMUP (3)]
"""
import resource
import statistics
import sys

import numpy as np
from mpi4py import MPI
from mpi4py_fft import PFFT, newDistArray


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_nvcsw + r.ru_nivcsw


def main():
    comm = MPI.COMM_WORLD
    n, iterations = int(sys.argv[1]), int(sys.argv[2])
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    fft = PFFT(comm, (n, n, n), axes=(0, 1, 2), dtype=np.float64, grid=(-1, -1, 1))
    u = newDistArray(fft, False)
    u_hat = newDistArray(fft, True)
    u[:] = np.random.default_rng(comm.Get_rank()).random(u.shape)
    for _ in range(warmup):
        u_hat = fft.forward(u, u_hat)
        u = fft.backward(u_hat, u)
    times = []
    cpu0, switches0 = usage()
    for _ in range(iterations):
        comm.Barrier()
        start = MPI.Wtime()
        u_hat = fft.forward(u, u_hat)
        u = fft.backward(u_hat, u)
        times.append(comm.allreduce(MPI.Wtime() - start, op=MPI.MAX))
    cpu1, switches1 = usage()
    cpu = comm.allreduce(cpu1 - cpu0, op=MPI.SUM)
    switches = comm.allreduce(switches1 - switches0, op=MPI.SUM)
    fft.destroy()
    if comm.Get_rank() == 0:
        print(f"fft n {n} ranks {comm.Get_size()} pairs {iterations} "
              f"median_us {statistics.median(times) * 1e6:.1f} "
              f"cpu_us_per_pair {cpu / iterations * 1e6:.1f} "
              f"switches_per_pair {switches / iterations:.1f}", flush=True)


if __name__ == "__main__":
    main()
