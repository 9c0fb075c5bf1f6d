"""A Python FFT program (Debian's mpi4py-fft over mpi4py, linked to Open MPI): a 3-D real-to-complex
transform of a 2-D pencil decomposition (its transposes are MPI all-to-alls on subcommunicators),
forward and back ITERATIONS times, each rank checking that the round trip gives its input back and
the rank holding the zero frequency that it is the sum of the whole global array. Prints
"rank R: ALL OK" or what was wrong ("WRONG ...").

usage: mpi4py_fft_check.py N ITERATIONS   (an N x N x N array)
"""
import sys

import numpy as np
from mpi4py import MPI
from mpi4py_fft import PFFT, newDistArray


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    n, iterations = int(sys.argv[1]), int(sys.argv[2])
    # Two axes distributed: pencils, with transposes on two subcommunicators.
    fft = PFFT(comm, (n, n, n), axes=(0, 1, 2), dtype=np.float64, grid=(-1, -1, 1))
    u = newDistArray(fft, False)
    u_hat = newDistArray(fft, True)
    back = newDistArray(fft, False)
    ok = True
    for it in range(iterations):
        # Values from the global index and the iteration: every rank knows what it holds.
        index = np.meshgrid(*[np.arange(s.start, s.stop) for s in u.local_slice()], indexing="ij")
        u[:] = np.sin(index[0] + 2.0 * index[1] + 3.0 * index[2] + it) + 0.001 * index[0] * index[2]
        u_hat = fft.forward(u, u_hat)
        back = fft.backward(u_hat, back)
        error = float(np.max(np.abs(back - u))) if u.size else 0.0
        if error > 1e-10:
            print(f"rank {rank}: WRONG round trip {it}: off by {error}", flush=True)
            ok = False
        # The zero frequency is the global sum (mpi4py-fft's forward is normalised by 1/N^3).
        total = comm.allreduce(float(np.sum(u)), op=MPI.SUM)
        if all(s.start == 0 for s in u_hat.local_slice()):
            dc = u_hat[0, 0, 0] * n**3
            if abs(dc - total) > 1e-8 * max(1.0, abs(total)):
                print(f"rank {rank}: WRONG zero frequency {it}: {dc}, expected {total}", flush=True)
                ok = False
    fft.destroy()
    if ok:
        print(f"rank {rank}: ALL OK", flush=True)


if __name__ == "__main__":
    main()
