! A Fortran MPI program of the Alltoall family, built once per binding (-DMPIF_H: include
! 'mpif.h'; -DUSE_MPI: use mpi; -DUSE_MPI_F08: use mpi_f08) and per MPI, unmodified: per
! iteration MPI_Alltoall, MPI_Alltoall in place, MPI_Alltoallv with gaps between the blocks,
! MPI_Alltoallw receiving into a derived datatype at displacements in reverse rank order,
! MPI_Ialltoall completed by MPI_Wait and another by an MPI_Test loop, MPI_Ialltoallv completed
! by MPI_Waitall; with -DWITH_ALLTOALL_INIT, MPI_Alltoall_init started twice. Every element received is checked, and every gap left alone; each rank prints
! "rank R: ALL OK" or a line with WRONG and aborts. Argument: iterations.
program fortran_check
#include "fortran_binding.inc"
  ! Elements per rank and block: 1 KiB of INTEGERs.
  integer, parameter :: cnt = 256
  ! An MPI_Test loop that has not completed in this long is a hang.
  double precision, parameter :: deadline_s = 60d0
  integer :: ierr, me, n, it, iterations, j, k, round
  logical :: flag
  integer, allocatable :: sbuf(:), rbuf(:), scounts(:), sdispls(:), rcounts(:), rdispls(:)
  HANDLE(MPI_Request) :: req, reqs(1)
  HANDLE(MPI_Datatype) :: block
  HANDLE(MPI_Datatype), allocatable :: sendtypes(:), recvtypes(:)
  double precision :: started
  STATUS

  call start_check()
  allocate (sbuf(n * (cnt + 4)), rbuf(n * (cnt + 4)))
  allocate (scounts(0:n - 1), sdispls(0:n - 1), rcounts(0:n - 1), rdispls(0:n - 1))
  allocate (sendtypes(0:n - 1), recvtypes(0:n - 1))
  call MPI_Type_contiguous(cnt, MPI_INTEGER, block, ierr)
  call MPI_Type_commit(block, ierr)

  do it = 1, iterations
    ! MPI_Alltoall.
    call fill_blocks(1)
    rbuf = -1
    call MPI_Alltoall(sbuf, cnt, MPI_INTEGER, rbuf, cnt, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call expect_ok(ierr, 'MPI_Alltoall')
    call check_blocks(1, 'MPI_Alltoall')

    ! MPI_Alltoall in place: the receive buffer holds what this rank sends.
    do j = 0, n - 1
      do k = 1, cnt
        rbuf(j * cnt + k) = val(me, j, k, 2)
      end do
    end do
    call MPI_Alltoall(MPI_IN_PLACE, cnt, MPI_INTEGER, rbuf, cnt, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call expect_ok(ierr, 'MPI_Alltoall in place')
    call check_blocks(2, 'MPI_Alltoall in place')

    ! MPI_Alltoallv.
    call fill_vector(3)
    rbuf = -1
    call MPI_Alltoallv(sbuf, scounts, sdispls, MPI_INTEGER, rbuf, rcounts, rdispls, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call expect_ok(ierr, 'MPI_Alltoallv')
    call check_vector(3, 'MPI_Alltoallv')

    ! MPI_Alltoallw: INTEGERs sent, one contiguous block type received, block from rank i at
    ! block n-1-i; displacements in bytes.
    call fill_blocks(4)
    do j = 0, n - 1
      scounts(j) = cnt
      sdispls(j) = j * cnt * 4
      sendtypes(j) = MPI_INTEGER
      rcounts(j) = 1
      rdispls(j) = (n - 1 - j) * cnt * 4
      recvtypes(j) = block
    end do
    rbuf = -1
    call MPI_Alltoallw(sbuf, scounts, sdispls, sendtypes, rbuf, rcounts, rdispls, recvtypes, MPI_COMM_WORLD, ierr)
    call expect_ok(ierr, 'MPI_Alltoallw')
    call check_reversed_blocks(4, 'MPI_Alltoallw')

    ! MPI_Ialltoall, completed by MPI_Wait.
    call fill_blocks(5)
    rbuf = -1
    call MPI_Ialltoall(sbuf, cnt, MPI_INTEGER, rbuf, cnt, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
    call expect_ok(ierr, 'MPI_Ialltoall')
    call MPI_Wait(req, status, ierr)
    call expect_ok(ierr, 'MPI_Wait')
    if (req /= MPI_REQUEST_NULL) call wrong('MPI_Wait left the request active')
    call check_blocks(5, 'MPI_Ialltoall + MPI_Wait')

    ! MPI_Ialltoall, completed by MPI_Test, within the deadline.
    call fill_blocks(6)
    rbuf = -1
    call MPI_Ialltoall(sbuf, cnt, MPI_INTEGER, rbuf, cnt, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
    call expect_ok(ierr, 'MPI_Ialltoall')
    started = MPI_Wtime()
    flag = .false.
    do while (.not. flag)
      call MPI_Test(req, flag, MPI_STATUS_IGNORE, ierr)
      call expect_ok(ierr, 'MPI_Test')
      if (.not. flag .and. MPI_Wtime() - started > deadline_s) call wrong('MPI_Ialltoall + MPI_Test: not complete in time')
    end do
    if (req /= MPI_REQUEST_NULL) call wrong('MPI_Test left the request active')
    call check_blocks(6, 'MPI_Ialltoall + MPI_Test')

    ! MPI_Ialltoallv, completed by MPI_Waitall.
    call fill_vector(7)
    rbuf = -1
    call MPI_Ialltoallv(sbuf, scounts, sdispls, MPI_INTEGER, rbuf, rcounts, rdispls, MPI_INTEGER, MPI_COMM_WORLD, &
                        reqs(1), ierr)
    call expect_ok(ierr, 'MPI_Ialltoallv')
    call MPI_Waitall(1, reqs, MPI_STATUSES_IGNORE, ierr)
    call expect_ok(ierr, 'MPI_Waitall')
    if (reqs(1) /= MPI_REQUEST_NULL) call wrong('MPI_Waitall left the request active')
    call check_vector(7, 'MPI_Ialltoallv + MPI_Waitall')

#if defined(WITH_ALLTOALL_INIT)
    ! MPI_Alltoall_init (MPI 4.0, which MPICH 4 has): started twice, completed by MPI_Wait,
    ! which leaves the persistent request inactive, not null; then freed.
    call MPI_Alltoall_init(sbuf, cnt, MPI_INTEGER, rbuf, cnt, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, req, ierr)
    call expect_ok(ierr, 'MPI_Alltoall_init')
    do round = 8, 9
      call fill_blocks(round)
      rbuf = -1
      call MPI_Start(req, ierr)
      call expect_ok(ierr, 'MPI_Start')
      call MPI_Wait(req, status, ierr)
      call expect_ok(ierr, 'MPI_Wait')
      if (req == MPI_REQUEST_NULL) call wrong('MPI_Wait freed the persistent request')
      call check_blocks(round, 'MPI_Alltoall_init + MPI_Start + MPI_Wait')
    end do
    call MPI_Request_free(req, ierr)
    call expect_ok(ierr, 'MPI_Request_free')
#endif
  end do

  call MPI_Type_free(block, ierr)
  call finish_check()

contains

  ! Send blocks of `cnt` elements, the one for rank j at j*cnt.
  subroutine fill_blocks(call)
    integer, intent(in) :: call
    call fill_blocks_of(sbuf, call)
  end subroutine

  ! The Alltoallv layout: counts differ per pair, one element of gap (-7) after each send block
  ! and two after each receive block.
  subroutine fill_vector(call)
    integer, intent(in) :: call
    sbuf = -7
    call vector_layout(scounts, sdispls, 1, sbuf, call)
    call vector_layout(rcounts, rdispls, 2)
  end subroutine

#include "fortran_checks.inc"

end program fortran_check
