! A Fortran MPI program whose in-place calls of the Alltoall family pass send-side arrays of one
! element that end where a page nobody may read begins, built once per binding (-DMPIF_H:
! include 'mpif.h'; -DUSE_MPI: use mpi; -DUSE_MPI_F08: use mpi_f08) and per MPI. MPI ignores
! sendcounts, sdispls and sendtypes (and sendcount and sendtype) when the send buffer is
! MPI_IN_PLACE, so a program may pass whatever it has there; whatever reads such an array for
! every rank of the communicator faults on the guard page. Per iteration: MPI_Alltoallw in place
! (a block datatype received at displacements in reverse rank order), MPI_Alltoallv in place
! (counts differing per pair, gaps between the blocks), MPI_Ialltoallv in place completed by
! MPI_Wait, MPI_Alltoall and MPI_Ialltoall in place. Every element received is checked, and
! every gap left alone; each rank prints "rank R: ALL OK" or a line with WRONG and aborts.
! Argument: iterations.
program fortran_in_place_check
  use, intrinsic :: iso_c_binding
#include "fortran_binding.inc"
  interface
    type(c_ptr) function c_mmap(addr, length, prot, flags, fd, offset) bind(c, name='mmap')
      import :: c_ptr, c_size_t, c_int, c_long
      type(c_ptr), value :: addr
      integer(c_size_t), value :: length
      integer(c_int), value :: prot, flags, fd
      integer(c_long), value :: offset
    end function
    integer(c_int) function c_mprotect(addr, length, prot) bind(c, name='mprotect')
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: addr
      integer(c_size_t), value :: length
      integer(c_int), value :: prot
    end function
    integer(c_long) function c_sysconf(name) bind(c, name='sysconf')
      import :: c_int, c_long
      integer(c_int), value :: name
    end function
  end interface
  ! Linux's values (sys/mman.h, unistd.h).
  integer(c_int), parameter :: prot_none = 0, prot_read_write = 3, map_private_anonymous = 34, sc_pagesize = 30
  ! Elements per rank and block: 1 KiB of INTEGERs.
  integer, parameter :: cnt = 256
  integer :: ierr, me, n, it, iterations, i, k
  integer, allocatable :: rbuf(:), rcounts(:), rdispls(:)
  HANDLE(MPI_Datatype), allocatable :: recvtypes(:)
  HANDLE(MPI_Datatype) :: block
  HANDLE(MPI_Request) :: req
  ! The send-side arrays: one element each, the last before the guard page.
  integer, pointer, contiguous :: guarded_ints(:)
  HANDLE(MPI_Datatype), pointer, contiguous :: guarded_types(:)
  STATUS

  call start_check()
  call map_guarded_arrays()
  allocate (rbuf(n * (cnt + 4)), rcounts(0:n - 1), rdispls(0:n - 1), recvtypes(0:n - 1))
  call MPI_Type_contiguous(cnt, MPI_INTEGER, block, ierr)
  call MPI_Type_commit(block, ierr)

  do it = 1, iterations
    ! MPI_Alltoallw in place: one block type per rank, the block of rank i at block n-1-i
    ! (displacements in bytes); what goes to rank i is what lies there before the call.
    rbuf = -1
    do i = 0, n - 1
      rcounts(i) = 1
      rdispls(i) = (n - 1 - i) * cnt * 4
      recvtypes(i) = block
      do k = 1, cnt
        rbuf((n - 1 - i) * cnt + k) = val(me, i, k, 1)
      end do
    end do
    call MPI_Alltoallw(MPI_IN_PLACE, guarded_ints, guarded_ints, guarded_types, rbuf, rcounts, rdispls, recvtypes, &
                       MPI_COMM_WORLD, ierr)
    call expect_ok(ierr, 'MPI_Alltoallw in place')
    call check_reversed_blocks(1, 'MPI_Alltoallw in place')

    ! MPI_Alltoallv in place.
    call fill_vector(2)
    call MPI_Alltoallv(MPI_IN_PLACE, guarded_ints, guarded_ints, guarded_types(1), rbuf, rcounts, rdispls, &
                       MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call expect_ok(ierr, 'MPI_Alltoallv in place')
    call check_vector(2, 'MPI_Alltoallv in place')

    ! MPI_Ialltoallv in place, completed by MPI_Wait.
    call fill_vector(3)
    call MPI_Ialltoallv(MPI_IN_PLACE, guarded_ints, guarded_ints, guarded_types(1), rbuf, rcounts, rdispls, &
                        MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
    call expect_ok(ierr, 'MPI_Ialltoallv in place')
    call MPI_Wait(req, status, ierr)
    call expect_ok(ierr, 'MPI_Wait')
    call check_vector(3, 'MPI_Ialltoallv in place + MPI_Wait')

    ! MPI_Alltoall in place, its sendcount and sendtype ignored.
    call fill_blocks(4)
    call MPI_Alltoall(MPI_IN_PLACE, guarded_ints(1), guarded_types(1), rbuf, cnt, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call expect_ok(ierr, 'MPI_Alltoall in place')
    call check_blocks(4, 'MPI_Alltoall in place')

    ! MPI_Ialltoall in place, completed by MPI_Wait.
    call fill_blocks(5)
    call MPI_Ialltoall(MPI_IN_PLACE, guarded_ints(1), guarded_types(1), rbuf, cnt, MPI_INTEGER, MPI_COMM_WORLD, req, &
                       ierr)
    call expect_ok(ierr, 'MPI_Ialltoall in place')
    call MPI_Wait(req, status, ierr)
    call expect_ok(ierr, 'MPI_Wait')
    call check_blocks(5, 'MPI_Ialltoall in place + MPI_Wait')
  end do

  call MPI_Type_free(block, ierr)
  call finish_check()

contains

  ! Two pages, the second made unreadable; the guarded arrays are the last INTEGER (and the
  ! last handle, the same size) of the first.
  subroutine map_guarded_arrays()
    integer(c_long) :: page
    type(c_ptr) :: region
    integer(c_intptr_t) :: base, last
    page = c_sysconf(sc_pagesize)
    region = c_mmap(c_null_ptr, int(2 * page, c_size_t), prot_read_write, map_private_anonymous, -1_c_int, 0_c_long)
    base = transfer(region, base)
    if (base == -1) call wrong('mmap of the guarded arrays failed')
    if (c_mprotect(transfer(base + page, region), int(page, c_size_t), prot_none) /= 0) then
      call wrong('mprotect of the guard page failed')
    end if
    last = base + page - c_sizeof(0_c_int)
    call c_f_pointer(transfer(last, region), guarded_ints, [1])
    call c_f_pointer(transfer(last, region), guarded_types, [1])
    if (storage_size(guarded_types(1)) /= storage_size(0_c_int)) call wrong('a handle is not the size of an INTEGER')
  end subroutine

  ! In place: the receive buffer holds what this rank sends, the block for rank j at j*cnt.
  subroutine fill_blocks(call)
    integer, intent(in) :: call
    rbuf = -1
    call fill_blocks_of(rbuf, call)
  end subroutine

  ! In place, the Alltoallv layout with two elements of gap after each block: what goes to rank
  ! j lies where what comes from it will land.
  subroutine fill_vector(call)
    integer, intent(in) :: call
    rbuf = -1
    call vector_layout(rcounts, rdispls, 2, rbuf, call)
  end subroutine

#include "fortran_checks.inc"

end program fortran_in_place_check
