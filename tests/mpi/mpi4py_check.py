"""A Python MPI program (Debian's mpi4py, linked to Open MPI): Alltoall, Alltoallv, Alltoallw and
Ialltoall on COMM_WORLD over plain byte buffers, every received byte checked, each rank printing
"rank R: ALL OK" or the first wrong byte ("WRONG ...").

usage: mpi4py_check.py BYTES_PER_RANK ITERATIONS
"""
import array
import sys

from mpi4py import MPI


def byte(src, dst, k, call):
    return (src * 31 + dst * 7 + k * 3 + call * 13) & 0xFF


def fill(rank, size, counts, displs, call):
    buf = bytearray(sum(counts))
    for d in range(size):
        for k in range(counts[d]):
            buf[displs[d] + k] = byte(rank, d, k, call)
    return buf


def check(rank, size, recv, counts, displs, call, what):
    for s in range(size):
        for k in range(counts[s]):
            if recv[displs[s] + k] != byte(s, rank, k, call):
                print(f"rank {rank}: WRONG {what} call {call}: byte {k} from rank {s} is {recv[displs[s] + k]}, "
                      f"expected {byte(s, rank, k, call)}", flush=True)
                return False
    return True


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    m, iterations = int(sys.argv[1]), int(sys.argv[2])
    ok = True
    call = 0
    for _ in range(iterations):
        # Alltoall: m bytes to every rank.
        counts = [m] * size
        displs = [d * m for d in range(size)]
        send, recv = fill(rank, size, counts, displs, call), bytearray(m * size)
        comm.Alltoall([send, MPI.BYTE], [recv, MPI.BYTE])
        ok &= check(rank, size, recv, counts, displs, call, "Alltoall")
        call += 1
        # Ialltoall, completed by Wait.
        send, recv = fill(rank, size, counts, displs, call), bytearray(m * size)
        comm.Ialltoall([send, MPI.BYTE], [recv, MPI.BYTE]).Wait()
        ok &= check(rank, size, recv, counts, displs, call, "Ialltoall")
        call += 1
        # Alltoallv: rank s sends (s + d + 1) * 8 bytes to rank d.
        send_counts = [(rank + d + 1) * 8 for d in range(size)]
        recv_counts = [(s + rank + 1) * 8 for s in range(size)]
        send_displs = [sum(send_counts[:d]) for d in range(size)]
        recv_displs = [sum(recv_counts[:s]) for s in range(size)]
        send = fill(rank, size, send_counts, send_displs, call)
        recv = bytearray(sum(recv_counts))
        comm.Alltoallv([send, (send_counts, send_displs), MPI.BYTE], [recv, (recv_counts, recv_displs), MPI.BYTE])
        ok &= check(rank, size, recv, recv_counts, recv_displs, call, "Alltoallv")
        call += 1
        # Alltoallw: the same blocks, byte displacements, MPI.BYTE for every pair.
        send = fill(rank, size, send_counts, send_displs, call)
        recv = bytearray(sum(recv_counts))
        types = [MPI.BYTE] * size
        comm.Alltoallw([send, (send_counts, send_displs), types], [recv, (recv_counts, recv_displs), types])
        ok &= check(rank, size, recv, recv_counts, recv_displs, call, "Alltoallw")
        call += 1
    # A typed buffer too: doubles through Alltoall.
    send = array.array("d", [rank * 1000.0 + d for d in range(size)])
    recv = array.array("d", [0.0] * size)
    comm.Alltoall([send, MPI.DOUBLE], [recv, MPI.DOUBLE])
    for s in range(size):
        if recv[s] != s * 1000.0 + rank:
            print(f"rank {rank}: WRONG doubles: from rank {s} {recv[s]}", flush=True)
            ok = False
    if ok:
        print(f"rank {rank}: ALL OK", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
