! An unmodified Fortran MPI program (mpif.h): MPI_Alltoall of integers on MPI_COMM_WORLD, as many
! times as asked, every received integer checked. Open MPI's Fortran binding calls its own
! PMPI_Alltoall, which an LD_PRELOAD shim never sees; the collective component does.
!
! usage: coll_component_fortran_check per_rank iterations
! Prints "rank R: ALL OK" per rank on success; stops with status 1 on the first wrong integer.
program coll_component_fortran_check
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nranks, per_rank, iterations, it, dst, src, i
  integer, allocatable :: sendbuf(:), recvbuf(:)
  character(len=32) :: arg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call get_command_argument(1, arg)
  read (arg, *) per_rank
  call get_command_argument(2, arg)
  read (arg, *) iterations
  allocate (sendbuf(per_rank * nranks), recvbuf(per_rank * nranks))
  do it = 1, iterations
    do dst = 0, nranks - 1
      do i = 1, per_rank
        sendbuf(dst * per_rank + i) = rank * 1000003 + dst * 1009 + i * 7 + it
      end do
    end do
    recvbuf = -1
    call MPI_Alltoall(sendbuf, per_rank, MPI_INTEGER, recvbuf, per_rank, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) then
      print '(a,i0,a,i0)', 'rank ', rank, ': MPI_Alltoall returned ', ierr
      stop 1
    end if
    do src = 0, nranks - 1
      do i = 1, per_rank
        if (recvbuf(src * per_rank + i) /= src * 1000003 + rank * 1009 + i * 7 + it) then
          print '(a,i0,a,i0,a,i0)', 'rank ', rank, ': WRONG integer ', i, ' from ', src
          stop 1
        end if
      end do
    end do
  end do
  print '(a,i0,a)', 'rank ', rank, ': ALL OK'
  call MPI_Finalize(ierr)
end program coll_component_fortran_check
