! dfort_stack: the tape of dfort's adjoints. Values pushed in the forward
! sweep are popped, last in first out, in the reverse sweep. Storage grows
! as needed (no fixed limit). dfort_stack_stats reports the bytes pushed so
! far and the peak size of the tape; dfort_stack_counts the number of
! integer entries (integers and logicals) and of real entries pushed so far
! (a scalar counts 1, an array its elements; a derived value, pushed as
! one record of bytes by dfort_push_record, counts in neither);
! dfort_stack_depth the number
! of entries on the tape now, and dfort_stack_cut drops the entries above a
! depth dfort_stack_depth gave. Popping more than the tape holds stops the
! program with a message instead of reading past the tape. With
! DFORT_TAPE_MEMORY=MB in the environment the storage holds at most about
! that much and older entries go to a file (DFORT_TAPE_FILE, default
! dfort_tape.bin), written and read back in large blocks.
! dfort_push_pointer / dfort_pop_pointer save and restore a pointer's
! association, and dfort_push_allocation / dfort_pop_allocation move an
! allocatable array's allocation (with its values) out and back, each kind
! on a stack of its own with one mark on the tape per entry.
! dfort_push_region_* / dfort_pop_region_* save and restore the part of an
! array a callee can touch through an explicit-shape or assumed-size
! formal, seen from the actual with the formal's shape; dfort_region_* hold
! the adjoint of an actual that aliases another one (see their comment).
module dfort_stack
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_size_t, c_f_pointer, c_associated, &
    c_loc
  implicit none
  private
  public :: dfort_push, dfort_pop, dfort_stack_stats, dfort_stack_reset
  public :: dfort_stack_counts, dfort_stack_depth, dfort_stack_cut
  public :: dfort_push_mask, dfort_pop_mask, dfort_push_where, dfort_pop_where
  public :: dfort_push_pointer, dfort_pop_pointer, dfort_push_allocation, dfort_pop_allocation
  public :: dfort_stack_mark, dfort_stack_unmark, dfort_push_record, dfort_pop_record
  public :: dfort_ckp_start, dfort_ckp_next, dfort_ckp_stats
  public :: dfort_push_region_r8_1, dfort_pop_region_r8_1, dfort_push_region_r8_2
  public :: dfort_pop_region_r8_2, dfort_push_region_r8_3, dfort_pop_region_r8_3
  public :: dfort_push_region_r4_1, dfort_pop_region_r4_1, dfort_push_region_r4_2
  public :: dfort_pop_region_r4_2, dfort_push_region_r4_3, dfort_pop_region_r4_3
  public :: dfort_push_region_i4_1, dfort_pop_region_i4_1, dfort_push_region_i4_2
  public :: dfort_pop_region_i4_2, dfort_push_region_i4_3, dfort_pop_region_i4_3
  public :: dfort_push_region_c8_1, dfort_pop_region_c8_1, dfort_push_region_c8_2
  public :: dfort_pop_region_c8_2, dfort_push_region_c8_3, dfort_pop_region_c8_3
  public :: dfort_region_get_r8_1, dfort_region_add_r8_1
  public :: dfort_region_put_r8_1, dfort_region_get_r8_2
  public :: dfort_region_add_r8_2, dfort_region_put_r8_2
  public :: dfort_region_get_r8_3, dfort_region_add_r8_3, dfort_region_put_r8_3

  ! The tape's storage: one block from C's realloc, which grows it in place
  ! or moves its pages without copying them, seen as integer(8) entries
  ! (tape) and as real(8) entries (rtape, for real(8) values; arrays are
  ! copied by copy_r8).
  type(c_ptr), save :: block = c_null_ptr
  integer(8), pointer, contiguous, save :: tape(:) => null()
  real(8), pointer, contiguous, save :: rtape(:) => null()
  interface
    function c_realloc(p, n) bind(C, name='realloc') result(q)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
      integer(c_size_t), value :: n
      type(c_ptr) :: q
    end function c_realloc
    subroutine c_memcpy(d, s, n) bind(C, name='memcpy')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: d, s
      integer(c_size_t), value :: n
    end subroutine c_memcpy
  end interface
  integer(8), save :: top = 0
  integer(8), save :: capacity = 0
  ! A tape larger than memory (DFORT_TAPE_MEMORY=MB in the environment):
  ! once the storage holds that much, its older half is written to a file
  ! (DFORT_TAPE_FILE, default dfort_tape.bin in the working directory) as
  ! one block, and blocks come back, last first, when pops reach below what
  ! is in memory. `spilled` entries are in the file, below tape(1).
  integer(8), save :: spilled = 0
  integer(8), save :: spill_limit = -1
  integer, save :: spill_unit = 0
  logical, save :: spill_open = .false.
  integer(8), allocatable, save :: spill_blocks(:)
  integer, save :: nblocks = 0
  integer(8), save :: pushed_bytes = 0
  integer(8), save :: peak_words = 0
  integer(8), save :: pushed_ints = 0
  integer(8), save :: pushed_reals = 0
  ! Binomial checkpointing: steps run again without recording, and steps
  ! run with recording and reversed, since the start.
  integer(8), save :: ckp_advanced = 0
  integer(8), save :: ckp_reversed = 0
  ! Pointer associations and moved-out allocations, each kind on a stack
  ! of its own (a mark on the tape keeps the order checked).
  type ptr_r8_0
    real(8), pointer :: p => null()
  end type ptr_r8_0
  type(ptr_r8_0), allocatable, save :: ptape_r8_0(:)
  integer, save :: ptop_r8_0 = 0
  type ptr_r8_1
    real(8), pointer :: p(:) => null()
  end type ptr_r8_1
  type(ptr_r8_1), allocatable, save :: ptape_r8_1(:)
  integer, save :: ptop_r8_1 = 0
  type ptr_r8_2
    real(8), pointer :: p(:, :) => null()
  end type ptr_r8_2
  type(ptr_r8_2), allocatable, save :: ptape_r8_2(:)
  integer, save :: ptop_r8_2 = 0
  type ptr_r8_3
    real(8), pointer :: p(:, :, :) => null()
  end type ptr_r8_3
  type(ptr_r8_3), allocatable, save :: ptape_r8_3(:)
  integer, save :: ptop_r8_3 = 0
  type ptr_r4_0
    real(4), pointer :: p => null()
  end type ptr_r4_0
  type(ptr_r4_0), allocatable, save :: ptape_r4_0(:)
  integer, save :: ptop_r4_0 = 0
  type ptr_r4_1
    real(4), pointer :: p(:) => null()
  end type ptr_r4_1
  type(ptr_r4_1), allocatable, save :: ptape_r4_1(:)
  integer, save :: ptop_r4_1 = 0
  type ptr_r4_2
    real(4), pointer :: p(:, :) => null()
  end type ptr_r4_2
  type(ptr_r4_2), allocatable, save :: ptape_r4_2(:)
  integer, save :: ptop_r4_2 = 0
  type ptr_r4_3
    real(4), pointer :: p(:, :, :) => null()
  end type ptr_r4_3
  type(ptr_r4_3), allocatable, save :: ptape_r4_3(:)
  integer, save :: ptop_r4_3 = 0
  type ptr_i4_0
    integer(4), pointer :: p => null()
  end type ptr_i4_0
  type(ptr_i4_0), allocatable, save :: ptape_i4_0(:)
  integer, save :: ptop_i4_0 = 0
  type ptr_i4_1
    integer(4), pointer :: p(:) => null()
  end type ptr_i4_1
  type(ptr_i4_1), allocatable, save :: ptape_i4_1(:)
  integer, save :: ptop_i4_1 = 0
  type ptr_i4_2
    integer(4), pointer :: p(:, :) => null()
  end type ptr_i4_2
  type(ptr_i4_2), allocatable, save :: ptape_i4_2(:)
  integer, save :: ptop_i4_2 = 0
  type ptr_i4_3
    integer(4), pointer :: p(:, :, :) => null()
  end type ptr_i4_3
  type(ptr_i4_3), allocatable, save :: ptape_i4_3(:)
  integer, save :: ptop_i4_3 = 0
  type ptr_c8_0
    complex(8), pointer :: p => null()
  end type ptr_c8_0
  type(ptr_c8_0), allocatable, save :: ptape_c8_0(:)
  integer, save :: ptop_c8_0 = 0
  type ptr_c8_1
    complex(8), pointer :: p(:) => null()
  end type ptr_c8_1
  type(ptr_c8_1), allocatable, save :: ptape_c8_1(:)
  integer, save :: ptop_c8_1 = 0
  type ptr_c8_2
    complex(8), pointer :: p(:, :) => null()
  end type ptr_c8_2
  type(ptr_c8_2), allocatable, save :: ptape_c8_2(:)
  integer, save :: ptop_c8_2 = 0
  type ptr_c8_3
    complex(8), pointer :: p(:, :, :) => null()
  end type ptr_c8_3
  type(ptr_c8_3), allocatable, save :: ptape_c8_3(:)
  integer, save :: ptop_c8_3 = 0
  type alc_r8_1
    real(8), allocatable :: a(:)
  end type alc_r8_1
  type(alc_r8_1), allocatable, save :: atape_r8_1(:)
  integer, save :: atop_r8_1 = 0
  type alc_r8_2
    real(8), allocatable :: a(:, :)
  end type alc_r8_2
  type(alc_r8_2), allocatable, save :: atape_r8_2(:)
  integer, save :: atop_r8_2 = 0
  type alc_r8_3
    real(8), allocatable :: a(:, :, :)
  end type alc_r8_3
  type(alc_r8_3), allocatable, save :: atape_r8_3(:)
  integer, save :: atop_r8_3 = 0
  type alc_r4_1
    real(4), allocatable :: a(:)
  end type alc_r4_1
  type(alc_r4_1), allocatable, save :: atape_r4_1(:)
  integer, save :: atop_r4_1 = 0
  type alc_r4_2
    real(4), allocatable :: a(:, :)
  end type alc_r4_2
  type(alc_r4_2), allocatable, save :: atape_r4_2(:)
  integer, save :: atop_r4_2 = 0
  type alc_r4_3
    real(4), allocatable :: a(:, :, :)
  end type alc_r4_3
  type(alc_r4_3), allocatable, save :: atape_r4_3(:)
  integer, save :: atop_r4_3 = 0
  type alc_i4_1
    integer(4), allocatable :: a(:)
  end type alc_i4_1
  type(alc_i4_1), allocatable, save :: atape_i4_1(:)
  integer, save :: atop_i4_1 = 0
  type alc_i4_2
    integer(4), allocatable :: a(:, :)
  end type alc_i4_2
  type(alc_i4_2), allocatable, save :: atape_i4_2(:)
  integer, save :: atop_i4_2 = 0
  type alc_i4_3
    integer(4), allocatable :: a(:, :, :)
  end type alc_i4_3
  type(alc_i4_3), allocatable, save :: atape_i4_3(:)
  integer, save :: atop_i4_3 = 0
  type alc_c8_1
    complex(8), allocatable :: a(:)
  end type alc_c8_1
  type(alc_c8_1), allocatable, save :: atape_c8_1(:)
  integer, save :: atop_c8_1 = 0
  type alc_c8_2
    complex(8), allocatable :: a(:, :)
  end type alc_c8_2
  type(alc_c8_2), allocatable, save :: atape_c8_2(:)
  integer, save :: atop_c8_2 = 0
  type alc_c8_3
    complex(8), allocatable :: a(:, :, :)
  end type alc_c8_3
  type(alc_c8_3), allocatable, save :: atape_c8_3(:)
  integer, save :: atop_c8_3 = 0

  interface dfort_push
    module procedure push_r8, push_r4, push_i4, push_i8, push_l
    module procedure push_r8a, push_r4a, push_i4a, push_i8a, push_la
    module procedure push_r8a2, push_r4a2, push_i4a2, push_r8a3, push_r4a3, push_i4a3
    module procedure push_r8a4, push_r4a4, push_i4a4, push_r8a5, push_r4a5, push_i4a5
    module procedure push_r8a6, push_r4a6, push_i4a6, push_r8a7, push_r4a7, push_i4a7
    module procedure push_c8, push_c8a, push_c8a2, push_c8a3
    module procedure push_c4, push_c4a, push_c4a2, push_c4a3
    module procedure push_la2, push_la3, push_ch, push_cha
  end interface
  interface dfort_pop
    module procedure pop_r8, pop_r4, pop_i4, pop_i8, pop_l
    module procedure pop_r8a, pop_r4a, pop_i4a, pop_i8a, pop_la
    module procedure pop_r8a2, pop_r4a2, pop_i4a2, pop_r8a3, pop_r4a3, pop_i4a3
    module procedure pop_r8a4, pop_r4a4, pop_i4a4, pop_r8a5, pop_r4a5, pop_i4a5
    module procedure pop_r8a6, pop_r4a6, pop_i4a6, pop_r8a7, pop_r4a7, pop_i4a7
    module procedure pop_c8, pop_c8a, pop_c8a2, pop_c8a3
    module procedure pop_c4, pop_c4a, pop_c4a2, pop_c4a3
    module procedure pop_la2, pop_la3, pop_ch, pop_cha
  end interface
  ! The elements of an array a WHERE mask selects (the values a masked
  ! assignment overwrites), and their restoration.
  interface dfort_push_where
    module procedure pushw_r8_1, pushw_r4_1, pushw_i4_1, pushw_r8_2, pushw_r4_2, pushw_i4_2
    module procedure pushw_r8_3, pushw_r4_3, pushw_i4_3, pushw_r8_4, pushw_r4_4, pushw_i4_4
    module procedure pushw_r8_5, pushw_r4_5, pushw_i4_5, pushw_r8_6, pushw_r4_6, pushw_i4_6
    module procedure pushw_r8_7, pushw_r4_7, pushw_i4_7
  end interface
  interface dfort_pop_where
    module procedure popw_r8_1, popw_r4_1, popw_i4_1, popw_r8_2, popw_r4_2, popw_i4_2
    module procedure popw_r8_3, popw_r4_3, popw_i4_3, popw_r8_4, popw_r4_4, popw_i4_4
    module procedure popw_r8_5, popw_r4_5, popw_i4_5, popw_r8_6, popw_r4_6, popw_i4_6
    module procedure popw_r8_7, popw_r4_7, popw_i4_7
  end interface
  ! The mask of a WHERE (rank 1 to 7), 64 elements a tape slot, and its
  ! shape: popping allocates the mask to that shape.
  interface dfort_push_mask
    module procedure push_mask1, push_mask2, push_mask3, push_mask4, push_mask5, push_mask6
    module procedure push_mask7
  end interface
  interface dfort_pop_mask
    module procedure pop_mask1, pop_mask2, pop_mask3, pop_mask4, pop_mask5, pop_mask6
    module procedure pop_mask7
  end interface

  interface dfort_push_pointer
    module procedure pushp_r8_0, pushp_r8_1, pushp_r8_2, pushp_r8_3, pushp_r4_0, pushp_r4_1
    module procedure pushp_r4_2, pushp_r4_3, pushp_i4_0, pushp_i4_1, pushp_i4_2, pushp_i4_3
    module procedure pushp_c8_0, pushp_c8_1, pushp_c8_2, pushp_c8_3
  end interface
  interface dfort_pop_pointer
    module procedure popp_r8_0, popp_r8_1, popp_r8_2, popp_r8_3, popp_r4_0, popp_r4_1
    module procedure popp_r4_2, popp_r4_3, popp_i4_0, popp_i4_1, popp_i4_2, popp_i4_3
    module procedure popp_c8_0, popp_c8_1, popp_c8_2, popp_c8_3
  end interface
  interface dfort_push_allocation
    module procedure pusha_r8_1, pusha_r8_2, pusha_r8_3, pusha_r4_1, pusha_r4_2, pusha_r4_3
    module procedure pusha_i4_1, pusha_i4_2, pusha_i4_3, pusha_c8_1, pusha_c8_2, pusha_c8_3
  end interface
  interface dfort_pop_allocation
    module procedure popa_r8_1, popa_r8_2, popa_r8_3, popa_r4_1, popa_r4_2, popa_r4_3
    module procedure popa_i4_1, popa_i4_2, popa_i4_3, popa_c8_1, popa_c8_2, popa_c8_3
  end interface

contains

  subroutine grow(n)
    integer(8), intent(in) :: n
    if (spill_limit < 0) call read_spill_limit()
    if (spill_limit > 0 .and. capacity >= spill_limit .and. top >= 2) then
      call spill()
      if (top + n <= capacity) return
    end if
    call enlarge(n)
  end subroutine grow

  subroutine enlarge(n)
    integer(8), intent(in) :: n
    type(c_ptr) :: moved
    capacity = max(131072_8, 2_8*capacity, top + n)
    moved = c_realloc(block, int(8_8*capacity, c_size_t))
    if (.not. c_associated(moved)) error stop 'dfort_stack: no memory left for the tape'
    block = moved
    call c_f_pointer(block, tape, [capacity])
    call c_f_pointer(block, rtape, [capacity])
  end subroutine enlarge

  subroutine read_spill_limit()
    character(len=32) :: text
    integer :: status, mb
    spill_limit = 0
    call get_environment_variable('DFORT_TAPE_MEMORY', text, status=status)
    if (status /= 0) return
    read(text, *, iostat=status) mb
    if (status == 0 .and. mb > 0) spill_limit = int(mb, 8)*131072_8
  end subroutine read_spill_limit

  ! The older half of what is in memory, to the end of the file.
  subroutine spill()
    character(len=4096) :: path
    integer :: status
    integer(8) :: h, i
    integer(8), allocatable :: more(:)
    if (.not. spill_open) then
      spill_open = .true.
      call get_environment_variable('DFORT_TAPE_FILE', path, status=status)
      if (status /= 0) path = 'dfort_tape.bin'
      open(newunit=spill_unit, file=trim(path), access='stream', form='unformatted', &
        status='replace', action='readwrite', iostat=status)
      if (status /= 0) error stop 'dfort_stack: cannot open the tape file (DFORT_TAPE_FILE)'
      allocate(spill_blocks(64))
    end if
    h = top/2
    write(spill_unit, pos=8_8*spilled + 1, iostat=status) tape(1:h)
    if (status /= 0) error stop 'dfort_stack: cannot write the tape file (disk full?)'
    do i = 1, top - h
      tape(i) = tape(i + h)
    end do
    top = top - h
    spilled = spilled + h
    if (nblocks == size(spill_blocks)) then
      allocate(more(2*nblocks))
      more(1:nblocks) = spill_blocks
      call move_alloc(more, spill_blocks)
    end if
    nblocks = nblocks + 1
    spill_blocks(nblocks) = h
  end subroutine spill

  ! The last block written to the file, back below what is in memory.
  subroutine unspill()
    integer(8) :: h, i
    integer :: status
    h = spill_blocks(nblocks)
    if (top + h > capacity) call enlarge(h)
    do i = top, 1, -1
      tape(i + h) = tape(i)
    end do
    spilled = spilled - h
    read(spill_unit, pos=8_8*spilled + 1, iostat=status) tape(1:h)
    if (status /= 0) error stop 'dfort_stack: cannot read the tape file back'
    top = top + h
    nblocks = nblocks - 1
  end subroutine unspill

  !> Checks that the tape holds n entries before they are popped.
  subroutine take(n)
    integer(8), intent(in) :: n
    do while (n > top .and. nblocks > 0)
      call unspill()
    end do
    if (n > top) error stop 'dfort_pop: the tape holds fewer values than the adjoint pops'
  end subroutine take

  subroutine note(nbytes, nwords)
    integer(8), intent(in) :: nbytes, nwords
    pushed_bytes = pushed_bytes + nbytes
    top = top + nwords
    if (top + spilled > peak_words) peak_words = top + spilled
  end subroutine note

  !> note for nwords real entries.
  subroutine note_r(nbytes, nwords)
    integer(8), intent(in) :: nbytes, nwords
    pushed_reals = pushed_reals + nwords
    call note(nbytes, nwords)
  end subroutine note_r

  !> note for nwords integer (or logical) entries.
  subroutine note_i(nbytes, nwords)
    integer(8), intent(in) :: nbytes, nwords
    pushed_ints = pushed_ints + nwords
    call note(nbytes, nwords)
  end subroutine note_i

  subroutine push_r8(v)
    real(8), intent(in) :: v
    if (top + 1_8 > capacity) call grow(1_8)
    rtape(top + 1) = v
    call note_r(8_8, 1_8)
  end subroutine push_r8

  subroutine pop_r8(v)
    real(8), intent(out) :: v
    call take(1_8)
    v = rtape(top)
    top = top - 1
  end subroutine pop_r8

  ! A complex(8) value is its real part, then its imaginary part.
  subroutine push_c8(v)
    complex(8), intent(in) :: v
    call push_r8(real(v, 8))
    call push_r8(aimag(v))
  end subroutine push_c8

  subroutine pop_c8(v)
    complex(8), intent(out) :: v
    real(8) :: re, im
    call pop_r8(im)
    call pop_r8(re)
    v = cmplx(re, im, 8)
  end subroutine pop_c8

  subroutine push_c8a(v)
    complex(8), intent(in) :: v(:)
    call push_r8a(real(v, 8))
    call push_r8a(aimag(v))
  end subroutine push_c8a

  subroutine pop_c8a(v)
    complex(8), intent(out) :: v(:)
    real(8), allocatable :: re(:), im(:)
    allocate(re(size(v)), im(size(v)))
    call pop_r8a(im)
    call pop_r8a(re)
    v = cmplx(re, im, 8)
  end subroutine pop_c8a

  subroutine push_c8a2(v)
    complex(8), intent(in) :: v(:, :)
    call push_c8a(reshape(v, [size(v)]))
  end subroutine push_c8a2

  subroutine pop_c8a2(v)
    complex(8), intent(out) :: v(:, :)
    complex(8), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_c8a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_c8a2

  subroutine push_c8a3(v)
    complex(8), intent(in) :: v(:, :, :)
    call push_c8a(reshape(v, [size(v)]))
  end subroutine push_c8a3

  subroutine pop_c8a3(v)
    complex(8), intent(out) :: v(:, :, :)
    complex(8), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_c8a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_c8a3

  ! A complex(4) value is its real part, then its imaginary part.
  subroutine push_c4(v)
    complex(4), intent(in) :: v
    call push_r4(real(v, 4))
    call push_r4(aimag(v))
  end subroutine push_c4

  subroutine pop_c4(v)
    complex(4), intent(out) :: v
    real(4) :: re, im
    call pop_r4(im)
    call pop_r4(re)
    v = cmplx(re, im, 4)
  end subroutine pop_c4

  subroutine push_c4a(v)
    complex(4), intent(in) :: v(:)
    call push_r4a(real(v, 4))
    call push_r4a(aimag(v))
  end subroutine push_c4a

  subroutine pop_c4a(v)
    complex(4), intent(out) :: v(:)
    real(4), allocatable :: re(:), im(:)
    allocate(re(size(v)), im(size(v)))
    call pop_r4a(im)
    call pop_r4a(re)
    v = cmplx(re, im, 4)
  end subroutine pop_c4a

  subroutine push_c4a2(v)
    complex(4), intent(in) :: v(:, :)
    call push_c4a(reshape(v, [size(v)]))
  end subroutine push_c4a2

  subroutine pop_c4a2(v)
    complex(4), intent(out) :: v(:, :)
    complex(4), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_c4a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_c4a2

  subroutine push_c4a3(v)
    complex(4), intent(in) :: v(:, :, :)
    call push_c4a(reshape(v, [size(v)]))
  end subroutine push_c4a3

  subroutine pop_c4a3(v)
    complex(4), intent(out) :: v(:, :, :)
    complex(4), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_c4a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_c4a3

  subroutine push_r4(v)
    real(4), intent(in) :: v
    if (top + 1_8 > capacity) call grow(1_8)
    tape(top + 1) = int(transfer(v, 0_4), 8)
    call note_r(4_8, 1_8)
  end subroutine push_r4

  subroutine pop_r4(v)
    real(4), intent(out) :: v
    call take(1_8)
    v = transfer(int(tape(top), 4), v)
    top = top - 1
  end subroutine pop_r4

  subroutine push_i4(v)
    integer(4), intent(in) :: v
    if (top + 1_8 > capacity) call grow(1_8)
    tape(top + 1) = int(v, 8)
    call note_i(4_8, 1_8)
  end subroutine push_i4

  subroutine pop_i4(v)
    integer(4), intent(out) :: v
    call take(1_8)
    v = int(tape(top), 4)
    top = top - 1
  end subroutine pop_i4

  subroutine push_i8(v)
    integer(8), intent(in) :: v
    if (top + 1_8 > capacity) call grow(1_8)
    tape(top + 1) = v
    call note_i(8_8, 1_8)
  end subroutine push_i8

  subroutine pop_i8(v)
    integer(8), intent(out) :: v
    call take(1_8)
    v = tape(top)
    top = top - 1
  end subroutine pop_i8

  subroutine push_l(v)
    logical, intent(in) :: v
    if (top + 1_8 > capacity) call grow(1_8)
    tape(top + 1) = merge(1_8, 0_8, v)
    call note_i(4_8, 1_8)
  end subroutine push_l

  subroutine pop_l(v)
    logical, intent(out) :: v
    call take(1_8)
    v = tape(top) /= 0
    top = top - 1
  end subroutine pop_l

  subroutine push_r8a(v)
    real(8), intent(in) :: v(:)
    integer(8) :: n
    n = size(v, kind=8)
    call push_r8s(v, n)
  end subroutine push_r8a

  subroutine pop_r8a(v)
    real(8), intent(out) :: v(:)
    integer(8) :: n
    n = size(v, kind=8)
    call pop_r8s(v, n)
  end subroutine pop_r8a

  subroutine push_r4a(v)
    real(4), intent(in) :: v(:)
    integer(8) :: n, i
    n = size(v, kind=8)
    if (top + n > capacity) call grow(n)
    do i = 1, n
      tape(top + i) = int(transfer(v(i), 0_4), 8)
    end do
    call note_r(4_8*n, n)
  end subroutine push_r4a

  subroutine pop_r4a(v)
    real(4), intent(out) :: v(:)
    integer(8) :: n, i
    n = size(v, kind=8)
    call take(n)
    do i = 1, n
      v(i) = transfer(int(tape(top - n + i), 4), v(i))
    end do
    top = top - n
  end subroutine pop_r4a

  subroutine push_i4a(v)
    integer(4), intent(in) :: v(:)
    integer(8) :: n, i
    n = size(v, kind=8)
    if (top + n > capacity) call grow(n)
    do i = 1, n
      tape(top + i) = int(v(i), 8)
    end do
    call note_i(4_8*n, n)
  end subroutine push_i4a

  subroutine pop_i4a(v)
    integer(4), intent(out) :: v(:)
    integer(8) :: n, i
    n = size(v, kind=8)
    call take(n)
    do i = 1, n
      v(i) = int(tape(top - n + i), 4)
    end do
    top = top - n
  end subroutine pop_i4a

  subroutine push_i8a(v)
    integer(8), intent(in) :: v(:)
    integer(8) :: n
    n = size(v, kind=8)
    if (top + n > capacity) call grow(n)
    tape(top + 1:top + n) = v
    call note_i(8_8*n, n)
  end subroutine push_i8a

  subroutine pop_i8a(v)
    integer(8), intent(out) :: v(:)
    integer(8) :: n
    n = size(v, kind=8)
    call take(n)
    v = tape(top - n + 1:top)
    top = top - n
  end subroutine pop_i8a

  subroutine push_la(v)
    logical, intent(in) :: v(:)
    integer(8) :: n
    n = size(v, kind=8)
    if (top + n > capacity) call grow(n)
    tape(top + 1:top + n) = merge(1_8, 0_8, v)
    call note_i(4_8*n, n)
  end subroutine push_la

  subroutine pop_la(v)
    logical, intent(out) :: v(:)
    integer(8) :: n
    n = size(v, kind=8)
    call take(n)
    v = tape(top - n + 1:top) /= 0
    top = top - n
  end subroutine pop_la

  subroutine push_la2(v)
    logical, intent(in) :: v(:, :)
    call push_la(reshape(v, [size(v)]))
  end subroutine push_la2

  subroutine pop_la2(v)
    logical, intent(out) :: v(:, :)
    logical :: flat(size(v))
    call pop_la(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_la2

  subroutine push_la3(v)
    logical, intent(in) :: v(:, :, :)
    call push_la(reshape(v, [size(v)]))
  end subroutine push_la3

  subroutine pop_la3(v)
    logical, intent(out) :: v(:, :, :)
    logical :: flat(size(v))
    call pop_la(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_la3

  !> A character value: one entry per character (its code).
  subroutine push_ch(v)
    character(len=*), intent(in) :: v
    integer(8) :: n, i
    n = len(v, kind=8)
    if (top + n > capacity) call grow(n)
    do i = 1, n
      tape(top + i) = ichar(v(i:i), kind=8)
    end do
    call note_i(n, n)
  end subroutine push_ch

  subroutine pop_ch(v)
    character(len=*), intent(out) :: v
    integer(8) :: n, i
    n = len(v, kind=8)
    call take(n)
    do i = 1, n
      v(i:i) = char(tape(top - n + i))
    end do
    top = top - n
  end subroutine pop_ch

  subroutine push_cha(v)
    character(len=*), intent(in) :: v(:)
    integer :: i
    do i = 1, size(v)
      call push_ch(v(i))
    end do
  end subroutine push_cha

  subroutine pop_cha(v)
    character(len=*), intent(out) :: v(:)
    integer :: i
    do i = size(v), 1, -1
      call pop_ch(v(i))
    end do
  end subroutine pop_cha

  ! to = from, n values: explicit-shape dummies, which do not overlap, so
  ! that the copy is a plain block copy (the tape is a pointer, which an
  ! assignment would have to check for overlap).
  subroutine copy_r8(from, to, n)
    integer(8), intent(in) :: n
    real(8), intent(in) :: from(n)
    real(8), intent(out) :: to(n)
    to = from
  end subroutine copy_r8

  ! The entries of an array of any rank, in array element order: explicit-
  ! shape dummies (sequence association), so that a contiguous actual is
  ! read and written in place.
  subroutine push_r8s(w, n)
    integer(8), intent(in) :: n
    real(8), intent(in) :: w(n)
    if (n == 0) return
    if (top + n > capacity) call grow(n)
    call copy_r8(w, rtape(top + 1:top + n), n)
    call note_r(8_8*n, n)
  end subroutine push_r8s

  subroutine pop_r8s(w, n)
    integer(8), intent(in) :: n
    real(8), intent(out) :: w(n)
    if (n == 0) return
    call take(n)
    call copy_r8(rtape(top - n + 1:top), w, n)
    top = top - n
  end subroutine pop_r8s

  ! A derived value (or a contiguous array of them) as one record: the
  ! nbytes bytes at p (its derivative module's dfort_push passes c_loc of
  ! the value and its storage size), copied in one block into whole tape
  ! words; dfort_pop_record copies them back to p.
  subroutine dfort_push_record(p, nbytes)
    type(c_ptr), intent(in) :: p
    integer(8), intent(in) :: nbytes
    integer(8) :: n
    n = (nbytes + 7_8)/8_8
    if (n == 0) return
    if (top + n > capacity) call grow(n)
    call c_memcpy(c_loc(tape(top + 1)), p, int(nbytes, c_size_t))
    call note(nbytes, n)
  end subroutine dfort_push_record

  subroutine dfort_pop_record(p, nbytes)
    type(c_ptr), intent(in) :: p
    integer(8), intent(in) :: nbytes
    integer(8) :: n
    n = (nbytes + 7_8)/8_8
    if (n == 0) return
    call take(n)
    call c_memcpy(p, c_loc(tape(top - n + 1)), int(nbytes, c_size_t))
    top = top - n
  end subroutine dfort_pop_record

  subroutine push_r4s(w, n)
    integer(8), intent(in) :: n
    real(4), intent(in) :: w(n)
    integer(8) :: i
    if (top + n > capacity) call grow(n)
    do i = 1, n
      tape(top + i) = int(transfer(w(i), 0_4), 8)
    end do
    call note_r(4_8*n, n)
  end subroutine push_r4s

  subroutine pop_r4s(w, n)
    integer(8), intent(in) :: n
    real(4), intent(out) :: w(n)
    integer(8) :: i
    call take(n)
    do i = 1, n
      w(i) = transfer(int(tape(top - n + i), 4), w(i))
    end do
    top = top - n
  end subroutine pop_r4s

  subroutine push_i4s(w, n)
    integer(8), intent(in) :: n
    integer(4), intent(in) :: w(n)
    integer(8) :: i
    if (top + n > capacity) call grow(n)
    do i = 1, n
      tape(top + i) = int(w(i), 8)
    end do
    call note_i(4_8*n, n)
  end subroutine push_i4s

  subroutine pop_i4s(w, n)
    integer(8), intent(in) :: n
    integer(4), intent(out) :: w(n)
    integer(8) :: i
    call take(n)
    do i = 1, n
      w(i) = int(tape(top - n + i), 4)
    end do
    top = top - n
  end subroutine pop_i4s

  subroutine push_r8a2(v)
    real(8), intent(in) :: v(:, :)
    call push_r8s(v, size(v, kind=8))
  end subroutine push_r8a2

  subroutine pop_r8a2(v)
    real(8), intent(out) :: v(:, :)
    call pop_r8s(v, size(v, kind=8))
  end subroutine pop_r8a2

  subroutine push_r8a3(v)
    real(8), intent(in) :: v(:, :, :)
    call push_r8s(v, size(v, kind=8))
  end subroutine push_r8a3

  subroutine pop_r8a3(v)
    real(8), intent(out) :: v(:, :, :)
    call pop_r8s(v, size(v, kind=8))
  end subroutine pop_r8a3

  subroutine push_r4a2(v)
    real(4), intent(in) :: v(:, :)
    call push_r4s(v, size(v, kind=8))
  end subroutine push_r4a2

  subroutine pop_r4a2(v)
    real(4), intent(out) :: v(:, :)
    call pop_r4s(v, size(v, kind=8))
  end subroutine pop_r4a2

  subroutine push_r4a3(v)
    real(4), intent(in) :: v(:, :, :)
    call push_r4s(v, size(v, kind=8))
  end subroutine push_r4a3

  subroutine pop_r4a3(v)
    real(4), intent(out) :: v(:, :, :)
    call pop_r4s(v, size(v, kind=8))
  end subroutine pop_r4a3

  subroutine push_i4a2(v)
    integer(4), intent(in) :: v(:, :)
    call push_i4s(v, size(v, kind=8))
  end subroutine push_i4a2

  subroutine pop_i4a2(v)
    integer(4), intent(out) :: v(:, :)
    call pop_i4s(v, size(v, kind=8))
  end subroutine pop_i4a2

  subroutine push_i4a3(v)
    integer(4), intent(in) :: v(:, :, :)
    call push_i4s(v, size(v, kind=8))
  end subroutine push_i4a3

  subroutine pop_i4a3(v)
    integer(4), intent(out) :: v(:, :, :)
    call pop_i4s(v, size(v, kind=8))
  end subroutine pop_i4a3

  !> Pushes the elements of a mask in array element order, packed 64 a
  !> slot, then its shape. Counted as one integer entry per slot.
  subroutine push_bits(v, shp)
    logical, intent(in) :: v(:)
    integer(8), intent(in) :: shp(:)
    integer(8) :: n, w, i, r
    n = size(v, kind=8)
    w = (n + 63_8) / 64_8
    r = size(shp, kind=8)
    if (top + w + r > capacity) call grow(w + r)
    tape(top + 1:top + w) = 0_8
    do i = 0_8, n - 1_8
      if (v(i + 1_8)) then
        tape(top + 1_8 + i / 64_8) = ibset(tape(top + 1_8 + i / 64_8), int(mod(i, 64_8)))
      end if
    end do
    tape(top + w + 1:top + w + r) = shp
    call note_i(8_8 * (w + r), w + r)
  end subroutine push_bits

  !> Pops the shape of a mask of rank r, then its elements (of push_bits).
  subroutine pop_bits(r, shp, flat)
    integer, intent(in) :: r
    integer(8), intent(out) :: shp(r)
    logical, allocatable, intent(out) :: flat(:)
    integer(8) :: n, w, i
    call take(int(r, 8))
    shp = tape(top - r + 1:top)
    top = top - r
    n = product(shp)
    w = (n + 63_8) / 64_8
    call take(w)
    allocate(flat(n))
    do i = 0_8, n - 1_8
      flat(i + 1_8) = btest(tape(top - w + 1_8 + i / 64_8), int(mod(i, 64_8)))
    end do
    top = top - w
  end subroutine pop_bits

  subroutine push_mask1(v)
    logical, allocatable, intent(in) :: v(:)
    call push_bits(v, shape(v, kind=8))
  end subroutine push_mask1

  subroutine pop_mask1(v)
    logical, allocatable, intent(inout) :: v(:)
    integer(8) :: shp(1)
    logical, allocatable :: flat(:)
    call pop_bits(1, shp, flat)
    call move_alloc(flat, v)
  end subroutine pop_mask1

  subroutine push_mask2(v)
    logical, allocatable, intent(in) :: v(:, :)
    call push_bits(reshape(v, [size(v)]), shape(v, kind=8))
  end subroutine push_mask2

  subroutine pop_mask2(v)
    logical, allocatable, intent(inout) :: v(:, :)
    integer(8) :: shp(2)
    logical, allocatable :: flat(:)
    call pop_bits(2, shp, flat)
    if (allocated(v)) deallocate(v)
    allocate(v(shp(1), shp(2)))
    v = reshape(flat, shape(v))
  end subroutine pop_mask2

  subroutine push_mask3(v)
    logical, allocatable, intent(in) :: v(:, :, :)
    call push_bits(reshape(v, [size(v)]), shape(v, kind=8))
  end subroutine push_mask3

  subroutine pop_mask3(v)
    logical, allocatable, intent(inout) :: v(:, :, :)
    integer(8) :: shp(3)
    logical, allocatable :: flat(:)
    call pop_bits(3, shp, flat)
    if (allocated(v)) deallocate(v)
    allocate(v(shp(1), shp(2), shp(3)))
    v = reshape(flat, shape(v))
  end subroutine pop_mask3

  subroutine push_r8a4(v)
    real(8), intent(in) :: v(:, :, :, :)
    call push_r8s(v, size(v, kind=8))
  end subroutine push_r8a4

  subroutine pop_r8a4(v)
    real(8), intent(out) :: v(:, :, :, :)
    call pop_r8s(v, size(v, kind=8))
  end subroutine pop_r8a4

  subroutine push_r4a4(v)
    real(4), intent(in) :: v(:, :, :, :)
    call push_r4s(v, size(v, kind=8))
  end subroutine push_r4a4

  subroutine pop_r4a4(v)
    real(4), intent(out) :: v(:, :, :, :)
    call pop_r4s(v, size(v, kind=8))
  end subroutine pop_r4a4

  subroutine push_i4a4(v)
    integer(4), intent(in) :: v(:, :, :, :)
    call push_i4s(v, size(v, kind=8))
  end subroutine push_i4a4

  subroutine pop_i4a4(v)
    integer(4), intent(out) :: v(:, :, :, :)
    call pop_i4s(v, size(v, kind=8))
  end subroutine pop_i4a4

  subroutine push_r8a5(v)
    real(8), intent(in) :: v(:, :, :, :, :)
    call push_r8s(v, size(v, kind=8))
  end subroutine push_r8a5

  subroutine pop_r8a5(v)
    real(8), intent(out) :: v(:, :, :, :, :)
    call pop_r8s(v, size(v, kind=8))
  end subroutine pop_r8a5

  subroutine push_r4a5(v)
    real(4), intent(in) :: v(:, :, :, :, :)
    call push_r4s(v, size(v, kind=8))
  end subroutine push_r4a5

  subroutine pop_r4a5(v)
    real(4), intent(out) :: v(:, :, :, :, :)
    call pop_r4s(v, size(v, kind=8))
  end subroutine pop_r4a5

  subroutine push_i4a5(v)
    integer(4), intent(in) :: v(:, :, :, :, :)
    call push_i4s(v, size(v, kind=8))
  end subroutine push_i4a5

  subroutine pop_i4a5(v)
    integer(4), intent(out) :: v(:, :, :, :, :)
    call pop_i4s(v, size(v, kind=8))
  end subroutine pop_i4a5

  subroutine push_r8a6(v)
    real(8), intent(in) :: v(:, :, :, :, :, :)
    call push_r8s(v, size(v, kind=8))
  end subroutine push_r8a6

  subroutine pop_r8a6(v)
    real(8), intent(out) :: v(:, :, :, :, :, :)
    call pop_r8s(v, size(v, kind=8))
  end subroutine pop_r8a6

  subroutine push_r4a6(v)
    real(4), intent(in) :: v(:, :, :, :, :, :)
    call push_r4s(v, size(v, kind=8))
  end subroutine push_r4a6

  subroutine pop_r4a6(v)
    real(4), intent(out) :: v(:, :, :, :, :, :)
    call pop_r4s(v, size(v, kind=8))
  end subroutine pop_r4a6

  subroutine push_i4a6(v)
    integer(4), intent(in) :: v(:, :, :, :, :, :)
    call push_i4s(v, size(v, kind=8))
  end subroutine push_i4a6

  subroutine pop_i4a6(v)
    integer(4), intent(out) :: v(:, :, :, :, :, :)
    call pop_i4s(v, size(v, kind=8))
  end subroutine pop_i4a6

  subroutine push_r8a7(v)
    real(8), intent(in) :: v(:, :, :, :, :, :, :)
    call push_r8s(v, size(v, kind=8))
  end subroutine push_r8a7

  subroutine pop_r8a7(v)
    real(8), intent(out) :: v(:, :, :, :, :, :, :)
    call pop_r8s(v, size(v, kind=8))
  end subroutine pop_r8a7

  subroutine push_r4a7(v)
    real(4), intent(in) :: v(:, :, :, :, :, :, :)
    call push_r4s(v, size(v, kind=8))
  end subroutine push_r4a7

  subroutine pop_r4a7(v)
    real(4), intent(out) :: v(:, :, :, :, :, :, :)
    call pop_r4s(v, size(v, kind=8))
  end subroutine pop_r4a7

  subroutine push_i4a7(v)
    integer(4), intent(in) :: v(:, :, :, :, :, :, :)
    call push_i4s(v, size(v, kind=8))
  end subroutine push_i4a7

  subroutine pop_i4a7(v)
    integer(4), intent(out) :: v(:, :, :, :, :, :, :)
    call pop_i4s(v, size(v, kind=8))
  end subroutine pop_i4a7

  subroutine push_mask4(v)
    logical, allocatable, intent(in) :: v(:, :, :, :)
    call push_bits(reshape(v, [size(v)]), shape(v, kind=8))
  end subroutine push_mask4

  subroutine pop_mask4(v)
    logical, allocatable, intent(inout) :: v(:, :, :, :)
    integer(8) :: shp(4)
    logical, allocatable :: flat(:)
    call pop_bits(4, shp, flat)
    if (allocated(v)) deallocate(v)
    allocate(v(shp(1), shp(2), shp(3), shp(4)))
    v = reshape(flat, shape(v))
  end subroutine pop_mask4

  subroutine push_mask5(v)
    logical, allocatable, intent(in) :: v(:, :, :, :, :)
    call push_bits(reshape(v, [size(v)]), shape(v, kind=8))
  end subroutine push_mask5

  subroutine pop_mask5(v)
    logical, allocatable, intent(inout) :: v(:, :, :, :, :)
    integer(8) :: shp(5)
    logical, allocatable :: flat(:)
    call pop_bits(5, shp, flat)
    if (allocated(v)) deallocate(v)
    allocate(v(shp(1), shp(2), shp(3), shp(4), shp(5)))
    v = reshape(flat, shape(v))
  end subroutine pop_mask5

  subroutine push_mask6(v)
    logical, allocatable, intent(in) :: v(:, :, :, :, :, :)
    call push_bits(reshape(v, [size(v)]), shape(v, kind=8))
  end subroutine push_mask6

  subroutine pop_mask6(v)
    logical, allocatable, intent(inout) :: v(:, :, :, :, :, :)
    integer(8) :: shp(6)
    logical, allocatable :: flat(:)
    call pop_bits(6, shp, flat)
    if (allocated(v)) deallocate(v)
    allocate(v(shp(1), shp(2), shp(3), shp(4), shp(5), shp(6)))
    v = reshape(flat, shape(v))
  end subroutine pop_mask6

  subroutine push_mask7(v)
    logical, allocatable, intent(in) :: v(:, :, :, :, :, :, :)
    call push_bits(reshape(v, [size(v)]), shape(v, kind=8))
  end subroutine push_mask7

  subroutine pop_mask7(v)
    logical, allocatable, intent(inout) :: v(:, :, :, :, :, :, :)
    integer(8) :: shp(7)
    logical, allocatable :: flat(:)
    call pop_bits(7, shp, flat)
    if (allocated(v)) deallocate(v)
    allocate(v(shp(1), shp(2), shp(3), shp(4), shp(5), shp(6), shp(7)))
    v = reshape(flat, shape(v))
  end subroutine pop_mask7

  subroutine pushw_r8_1(v, m)
    real(8), intent(in) :: v(:)
    logical, intent(in) :: m(:)
    integer(8) :: n, k
    integer :: i1
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i1 = 1, size(v, 1)
      if (m(i1)) then
        k = k + 1
        tape(top + k) = transfer(v(i1), 0_8)
      end if
    end do
    call note_r(8_8*n, n)
  end subroutine pushw_r8_1

  subroutine popw_r8_1(v, m)
    real(8), intent(inout) :: v(:)
    logical, intent(in) :: m(:)
    integer(8) :: n, k
    integer :: i1
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i1 = 1, size(v, 1)
      if (m(i1)) then
        k = k + 1
        v(i1) = transfer(tape(top - n + k), v(i1))
      end if
    end do
    top = top - n
  end subroutine popw_r8_1

  subroutine pushw_r4_1(v, m)
    real(4), intent(in) :: v(:)
    logical, intent(in) :: m(:)
    integer(8) :: n, k
    integer :: i1
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i1 = 1, size(v, 1)
      if (m(i1)) then
        k = k + 1
        tape(top + k) = int(transfer(v(i1), 0_4), 8)
      end if
    end do
    call note_r(4_8*n, n)
  end subroutine pushw_r4_1

  subroutine popw_r4_1(v, m)
    real(4), intent(inout) :: v(:)
    logical, intent(in) :: m(:)
    integer(8) :: n, k
    integer :: i1
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i1 = 1, size(v, 1)
      if (m(i1)) then
        k = k + 1
        v(i1) = transfer(int(tape(top - n + k), 4), v(i1))
      end if
    end do
    top = top - n
  end subroutine popw_r4_1

  subroutine pushw_i4_1(v, m)
    integer(4), intent(in) :: v(:)
    logical, intent(in) :: m(:)
    integer(8) :: n, k
    integer :: i1
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i1 = 1, size(v, 1)
      if (m(i1)) then
        k = k + 1
        tape(top + k) = int(v(i1), 8)
      end if
    end do
    call note_i(4_8*n, n)
  end subroutine pushw_i4_1

  subroutine popw_i4_1(v, m)
    integer(4), intent(inout) :: v(:)
    logical, intent(in) :: m(:)
    integer(8) :: n, k
    integer :: i1
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i1 = 1, size(v, 1)
      if (m(i1)) then
        k = k + 1
        v(i1) = int(tape(top - n + k), 4)
      end if
    end do
    top = top - n
  end subroutine popw_i4_1

  subroutine pushw_r8_2(v, m)
    real(8), intent(in) :: v(:, :)
    logical, intent(in) :: m(:, :)
    integer(8) :: n, k
    integer :: i1, i2
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i2 = 1, size(v, 2)
      do i1 = 1, size(v, 1)
        if (m(i1, i2)) then
          k = k + 1
          tape(top + k) = transfer(v(i1, i2), 0_8)
        end if
      end do
    end do
    call note_r(8_8*n, n)
  end subroutine pushw_r8_2

  subroutine popw_r8_2(v, m)
    real(8), intent(inout) :: v(:, :)
    logical, intent(in) :: m(:, :)
    integer(8) :: n, k
    integer :: i1, i2
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i2 = 1, size(v, 2)
      do i1 = 1, size(v, 1)
        if (m(i1, i2)) then
          k = k + 1
          v(i1, i2) = transfer(tape(top - n + k), v(i1, i2))
        end if
      end do
    end do
    top = top - n
  end subroutine popw_r8_2

  subroutine pushw_r4_2(v, m)
    real(4), intent(in) :: v(:, :)
    logical, intent(in) :: m(:, :)
    integer(8) :: n, k
    integer :: i1, i2
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i2 = 1, size(v, 2)
      do i1 = 1, size(v, 1)
        if (m(i1, i2)) then
          k = k + 1
          tape(top + k) = int(transfer(v(i1, i2), 0_4), 8)
        end if
      end do
    end do
    call note_r(4_8*n, n)
  end subroutine pushw_r4_2

  subroutine popw_r4_2(v, m)
    real(4), intent(inout) :: v(:, :)
    logical, intent(in) :: m(:, :)
    integer(8) :: n, k
    integer :: i1, i2
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i2 = 1, size(v, 2)
      do i1 = 1, size(v, 1)
        if (m(i1, i2)) then
          k = k + 1
          v(i1, i2) = transfer(int(tape(top - n + k), 4), v(i1, i2))
        end if
      end do
    end do
    top = top - n
  end subroutine popw_r4_2

  subroutine pushw_i4_2(v, m)
    integer(4), intent(in) :: v(:, :)
    logical, intent(in) :: m(:, :)
    integer(8) :: n, k
    integer :: i1, i2
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i2 = 1, size(v, 2)
      do i1 = 1, size(v, 1)
        if (m(i1, i2)) then
          k = k + 1
          tape(top + k) = int(v(i1, i2), 8)
        end if
      end do
    end do
    call note_i(4_8*n, n)
  end subroutine pushw_i4_2

  subroutine popw_i4_2(v, m)
    integer(4), intent(inout) :: v(:, :)
    logical, intent(in) :: m(:, :)
    integer(8) :: n, k
    integer :: i1, i2
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i2 = 1, size(v, 2)
      do i1 = 1, size(v, 1)
        if (m(i1, i2)) then
          k = k + 1
          v(i1, i2) = int(tape(top - n + k), 4)
        end if
      end do
    end do
    top = top - n
  end subroutine popw_i4_2

  subroutine pushw_r8_3(v, m)
    real(8), intent(in) :: v(:, :, :)
    logical, intent(in) :: m(:, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i3 = 1, size(v, 3)
      do i2 = 1, size(v, 2)
        do i1 = 1, size(v, 1)
          if (m(i1, i2, i3)) then
            k = k + 1
            tape(top + k) = transfer(v(i1, i2, i3), 0_8)
          end if
        end do
      end do
    end do
    call note_r(8_8*n, n)
  end subroutine pushw_r8_3

  subroutine popw_r8_3(v, m)
    real(8), intent(inout) :: v(:, :, :)
    logical, intent(in) :: m(:, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i3 = 1, size(v, 3)
      do i2 = 1, size(v, 2)
        do i1 = 1, size(v, 1)
          if (m(i1, i2, i3)) then
            k = k + 1
            v(i1, i2, i3) = transfer(tape(top - n + k), v(i1, i2, i3))
          end if
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r8_3

  subroutine pushw_r4_3(v, m)
    real(4), intent(in) :: v(:, :, :)
    logical, intent(in) :: m(:, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i3 = 1, size(v, 3)
      do i2 = 1, size(v, 2)
        do i1 = 1, size(v, 1)
          if (m(i1, i2, i3)) then
            k = k + 1
            tape(top + k) = int(transfer(v(i1, i2, i3), 0_4), 8)
          end if
        end do
      end do
    end do
    call note_r(4_8*n, n)
  end subroutine pushw_r4_3

  subroutine popw_r4_3(v, m)
    real(4), intent(inout) :: v(:, :, :)
    logical, intent(in) :: m(:, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i3 = 1, size(v, 3)
      do i2 = 1, size(v, 2)
        do i1 = 1, size(v, 1)
          if (m(i1, i2, i3)) then
            k = k + 1
            v(i1, i2, i3) = transfer(int(tape(top - n + k), 4), v(i1, i2, i3))
          end if
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r4_3

  subroutine pushw_i4_3(v, m)
    integer(4), intent(in) :: v(:, :, :)
    logical, intent(in) :: m(:, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i3 = 1, size(v, 3)
      do i2 = 1, size(v, 2)
        do i1 = 1, size(v, 1)
          if (m(i1, i2, i3)) then
            k = k + 1
            tape(top + k) = int(v(i1, i2, i3), 8)
          end if
        end do
      end do
    end do
    call note_i(4_8*n, n)
  end subroutine pushw_i4_3

  subroutine popw_i4_3(v, m)
    integer(4), intent(inout) :: v(:, :, :)
    logical, intent(in) :: m(:, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i3 = 1, size(v, 3)
      do i2 = 1, size(v, 2)
        do i1 = 1, size(v, 1)
          if (m(i1, i2, i3)) then
            k = k + 1
            v(i1, i2, i3) = int(tape(top - n + k), 4)
          end if
        end do
      end do
    end do
    top = top - n
  end subroutine popw_i4_3

  subroutine pushw_r8_4(v, m)
    real(8), intent(in) :: v(:, :, :, :)
    logical, intent(in) :: m(:, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i4 = 1, size(v, 4)
      do i3 = 1, size(v, 3)
        do i2 = 1, size(v, 2)
          do i1 = 1, size(v, 1)
            if (m(i1, i2, i3, i4)) then
              k = k + 1
              tape(top + k) = transfer(v(i1, i2, i3, i4), 0_8)
            end if
          end do
        end do
      end do
    end do
    call note_r(8_8*n, n)
  end subroutine pushw_r8_4

  subroutine popw_r8_4(v, m)
    real(8), intent(inout) :: v(:, :, :, :)
    logical, intent(in) :: m(:, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i4 = 1, size(v, 4)
      do i3 = 1, size(v, 3)
        do i2 = 1, size(v, 2)
          do i1 = 1, size(v, 1)
            if (m(i1, i2, i3, i4)) then
              k = k + 1
              v(i1, i2, i3, i4) = transfer(tape(top - n + k), v(i1, i2, i3, i4))
            end if
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r8_4

  subroutine pushw_r4_4(v, m)
    real(4), intent(in) :: v(:, :, :, :)
    logical, intent(in) :: m(:, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i4 = 1, size(v, 4)
      do i3 = 1, size(v, 3)
        do i2 = 1, size(v, 2)
          do i1 = 1, size(v, 1)
            if (m(i1, i2, i3, i4)) then
              k = k + 1
              tape(top + k) = int(transfer(v(i1, i2, i3, i4), 0_4), 8)
            end if
          end do
        end do
      end do
    end do
    call note_r(4_8*n, n)
  end subroutine pushw_r4_4

  subroutine popw_r4_4(v, m)
    real(4), intent(inout) :: v(:, :, :, :)
    logical, intent(in) :: m(:, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i4 = 1, size(v, 4)
      do i3 = 1, size(v, 3)
        do i2 = 1, size(v, 2)
          do i1 = 1, size(v, 1)
            if (m(i1, i2, i3, i4)) then
              k = k + 1
              v(i1, i2, i3, i4) = transfer(int(tape(top - n + k), 4), v(i1, i2, i3, i4))
            end if
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r4_4

  subroutine pushw_i4_4(v, m)
    integer(4), intent(in) :: v(:, :, :, :)
    logical, intent(in) :: m(:, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i4 = 1, size(v, 4)
      do i3 = 1, size(v, 3)
        do i2 = 1, size(v, 2)
          do i1 = 1, size(v, 1)
            if (m(i1, i2, i3, i4)) then
              k = k + 1
              tape(top + k) = int(v(i1, i2, i3, i4), 8)
            end if
          end do
        end do
      end do
    end do
    call note_i(4_8*n, n)
  end subroutine pushw_i4_4

  subroutine popw_i4_4(v, m)
    integer(4), intent(inout) :: v(:, :, :, :)
    logical, intent(in) :: m(:, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i4 = 1, size(v, 4)
      do i3 = 1, size(v, 3)
        do i2 = 1, size(v, 2)
          do i1 = 1, size(v, 1)
            if (m(i1, i2, i3, i4)) then
              k = k + 1
              v(i1, i2, i3, i4) = int(tape(top - n + k), 4)
            end if
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_i4_4

  subroutine pushw_r8_5(v, m)
    real(8), intent(in) :: v(:, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i5 = 1, size(v, 5)
      do i4 = 1, size(v, 4)
        do i3 = 1, size(v, 3)
          do i2 = 1, size(v, 2)
            do i1 = 1, size(v, 1)
              if (m(i1, i2, i3, i4, i5)) then
                k = k + 1
                tape(top + k) = transfer(v(i1, i2, i3, i4, i5), 0_8)
              end if
            end do
          end do
        end do
      end do
    end do
    call note_r(8_8*n, n)
  end subroutine pushw_r8_5

  subroutine popw_r8_5(v, m)
    real(8), intent(inout) :: v(:, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i5 = 1, size(v, 5)
      do i4 = 1, size(v, 4)
        do i3 = 1, size(v, 3)
          do i2 = 1, size(v, 2)
            do i1 = 1, size(v, 1)
              if (m(i1, i2, i3, i4, i5)) then
                k = k + 1
                v(i1, i2, i3, i4, i5) = transfer(tape(top - n + k), v(i1, i2, i3, i4, i5))
              end if
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r8_5

  subroutine pushw_r4_5(v, m)
    real(4), intent(in) :: v(:, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i5 = 1, size(v, 5)
      do i4 = 1, size(v, 4)
        do i3 = 1, size(v, 3)
          do i2 = 1, size(v, 2)
            do i1 = 1, size(v, 1)
              if (m(i1, i2, i3, i4, i5)) then
                k = k + 1
                tape(top + k) = int(transfer(v(i1, i2, i3, i4, i5), 0_4), 8)
              end if
            end do
          end do
        end do
      end do
    end do
    call note_r(4_8*n, n)
  end subroutine pushw_r4_5

  subroutine popw_r4_5(v, m)
    real(4), intent(inout) :: v(:, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i5 = 1, size(v, 5)
      do i4 = 1, size(v, 4)
        do i3 = 1, size(v, 3)
          do i2 = 1, size(v, 2)
            do i1 = 1, size(v, 1)
              if (m(i1, i2, i3, i4, i5)) then
                k = k + 1
                v(i1, i2, i3, i4, i5) = transfer(int(tape(top - n + k), 4), v(i1, i2, i3, i4, i5))
              end if
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r4_5

  subroutine pushw_i4_5(v, m)
    integer(4), intent(in) :: v(:, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i5 = 1, size(v, 5)
      do i4 = 1, size(v, 4)
        do i3 = 1, size(v, 3)
          do i2 = 1, size(v, 2)
            do i1 = 1, size(v, 1)
              if (m(i1, i2, i3, i4, i5)) then
                k = k + 1
                tape(top + k) = int(v(i1, i2, i3, i4, i5), 8)
              end if
            end do
          end do
        end do
      end do
    end do
    call note_i(4_8*n, n)
  end subroutine pushw_i4_5

  subroutine popw_i4_5(v, m)
    integer(4), intent(inout) :: v(:, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i5 = 1, size(v, 5)
      do i4 = 1, size(v, 4)
        do i3 = 1, size(v, 3)
          do i2 = 1, size(v, 2)
            do i1 = 1, size(v, 1)
              if (m(i1, i2, i3, i4, i5)) then
                k = k + 1
                v(i1, i2, i3, i4, i5) = int(tape(top - n + k), 4)
              end if
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_i4_5

  subroutine pushw_r8_6(v, m)
    real(8), intent(in) :: v(:, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i6 = 1, size(v, 6)
      do i5 = 1, size(v, 5)
        do i4 = 1, size(v, 4)
          do i3 = 1, size(v, 3)
            do i2 = 1, size(v, 2)
              do i1 = 1, size(v, 1)
                if (m(i1, i2, i3, i4, i5, i6)) then
                  k = k + 1
                  tape(top + k) = transfer(v(i1, i2, i3, i4, i5, i6), 0_8)
                end if
              end do
            end do
          end do
        end do
      end do
    end do
    call note_r(8_8*n, n)
  end subroutine pushw_r8_6

  subroutine popw_r8_6(v, m)
    real(8), intent(inout) :: v(:, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i6 = 1, size(v, 6)
      do i5 = 1, size(v, 5)
        do i4 = 1, size(v, 4)
          do i3 = 1, size(v, 3)
            do i2 = 1, size(v, 2)
              do i1 = 1, size(v, 1)
                if (m(i1, i2, i3, i4, i5, i6)) then
                  k = k + 1
                  v(i1, i2, i3, i4, i5, i6) = transfer(tape(top - n + k), v(i1, i2, i3, i4, i5, i6))
                end if
              end do
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r8_6

  subroutine pushw_r4_6(v, m)
    real(4), intent(in) :: v(:, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i6 = 1, size(v, 6)
      do i5 = 1, size(v, 5)
        do i4 = 1, size(v, 4)
          do i3 = 1, size(v, 3)
            do i2 = 1, size(v, 2)
              do i1 = 1, size(v, 1)
                if (m(i1, i2, i3, i4, i5, i6)) then
                  k = k + 1
                  tape(top + k) = int(transfer(v(i1, i2, i3, i4, i5, i6), 0_4), 8)
                end if
              end do
            end do
          end do
        end do
      end do
    end do
    call note_r(4_8*n, n)
  end subroutine pushw_r4_6

  subroutine popw_r4_6(v, m)
    real(4), intent(inout) :: v(:, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i6 = 1, size(v, 6)
      do i5 = 1, size(v, 5)
        do i4 = 1, size(v, 4)
          do i3 = 1, size(v, 3)
            do i2 = 1, size(v, 2)
              do i1 = 1, size(v, 1)
                if (m(i1, i2, i3, i4, i5, i6)) then
                  k = k + 1
                  v(i1, i2, i3, i4, i5, i6) = transfer(int(tape(top - n + k), 4), v(i1, i2, i3, i4, i5, i6))
                end if
              end do
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r4_6

  subroutine pushw_i4_6(v, m)
    integer(4), intent(in) :: v(:, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i6 = 1, size(v, 6)
      do i5 = 1, size(v, 5)
        do i4 = 1, size(v, 4)
          do i3 = 1, size(v, 3)
            do i2 = 1, size(v, 2)
              do i1 = 1, size(v, 1)
                if (m(i1, i2, i3, i4, i5, i6)) then
                  k = k + 1
                  tape(top + k) = int(v(i1, i2, i3, i4, i5, i6), 8)
                end if
              end do
            end do
          end do
        end do
      end do
    end do
    call note_i(4_8*n, n)
  end subroutine pushw_i4_6

  subroutine popw_i4_6(v, m)
    integer(4), intent(inout) :: v(:, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i6 = 1, size(v, 6)
      do i5 = 1, size(v, 5)
        do i4 = 1, size(v, 4)
          do i3 = 1, size(v, 3)
            do i2 = 1, size(v, 2)
              do i1 = 1, size(v, 1)
                if (m(i1, i2, i3, i4, i5, i6)) then
                  k = k + 1
                  v(i1, i2, i3, i4, i5, i6) = int(tape(top - n + k), 4)
                end if
              end do
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_i4_6

  subroutine pushw_r8_7(v, m)
    real(8), intent(in) :: v(:, :, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6, i7
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i7 = 1, size(v, 7)
      do i6 = 1, size(v, 6)
        do i5 = 1, size(v, 5)
          do i4 = 1, size(v, 4)
            do i3 = 1, size(v, 3)
              do i2 = 1, size(v, 2)
                do i1 = 1, size(v, 1)
                  if (m(i1, i2, i3, i4, i5, i6, i7)) then
                    k = k + 1
                    tape(top + k) = transfer(v(i1, i2, i3, i4, i5, i6, i7), 0_8)
                  end if
                end do
              end do
            end do
          end do
        end do
      end do
    end do
    call note_r(8_8*n, n)
  end subroutine pushw_r8_7

  subroutine popw_r8_7(v, m)
    real(8), intent(inout) :: v(:, :, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6, i7
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i7 = 1, size(v, 7)
      do i6 = 1, size(v, 6)
        do i5 = 1, size(v, 5)
          do i4 = 1, size(v, 4)
            do i3 = 1, size(v, 3)
              do i2 = 1, size(v, 2)
                do i1 = 1, size(v, 1)
                  if (m(i1, i2, i3, i4, i5, i6, i7)) then
                    k = k + 1
                    v(i1, i2, i3, i4, i5, i6, i7) = transfer(tape(top - n + k), v(i1, i2, i3, i4, i5, i6, i7))
                  end if
                end do
              end do
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r8_7

  subroutine pushw_r4_7(v, m)
    real(4), intent(in) :: v(:, :, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6, i7
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i7 = 1, size(v, 7)
      do i6 = 1, size(v, 6)
        do i5 = 1, size(v, 5)
          do i4 = 1, size(v, 4)
            do i3 = 1, size(v, 3)
              do i2 = 1, size(v, 2)
                do i1 = 1, size(v, 1)
                  if (m(i1, i2, i3, i4, i5, i6, i7)) then
                    k = k + 1
                    tape(top + k) = int(transfer(v(i1, i2, i3, i4, i5, i6, i7), 0_4), 8)
                  end if
                end do
              end do
            end do
          end do
        end do
      end do
    end do
    call note_r(4_8*n, n)
  end subroutine pushw_r4_7

  subroutine popw_r4_7(v, m)
    real(4), intent(inout) :: v(:, :, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6, i7
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i7 = 1, size(v, 7)
      do i6 = 1, size(v, 6)
        do i5 = 1, size(v, 5)
          do i4 = 1, size(v, 4)
            do i3 = 1, size(v, 3)
              do i2 = 1, size(v, 2)
                do i1 = 1, size(v, 1)
                  if (m(i1, i2, i3, i4, i5, i6, i7)) then
                    k = k + 1
                    v(i1, i2, i3, i4, i5, i6, i7) = transfer(int(tape(top - n + k), 4), v(i1, i2, i3, i4, i5, i6, i7))
                  end if
                end do
              end do
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_r4_7

  subroutine pushw_i4_7(v, m)
    integer(4), intent(in) :: v(:, :, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6, i7
    n = count(m, kind=8)
    if (top + n > capacity) call grow(n)
    k = 0
    do i7 = 1, size(v, 7)
      do i6 = 1, size(v, 6)
        do i5 = 1, size(v, 5)
          do i4 = 1, size(v, 4)
            do i3 = 1, size(v, 3)
              do i2 = 1, size(v, 2)
                do i1 = 1, size(v, 1)
                  if (m(i1, i2, i3, i4, i5, i6, i7)) then
                    k = k + 1
                    tape(top + k) = int(v(i1, i2, i3, i4, i5, i6, i7), 8)
                  end if
                end do
              end do
            end do
          end do
        end do
      end do
    end do
    call note_i(4_8*n, n)
  end subroutine pushw_i4_7

  subroutine popw_i4_7(v, m)
    integer(4), intent(inout) :: v(:, :, :, :, :, :, :)
    logical, intent(in) :: m(:, :, :, :, :, :, :)
    integer(8) :: n, k
    integer :: i1, i2, i3, i4, i5, i6, i7
    n = count(m, kind=8)
    call take(n)
    k = 0
    do i7 = 1, size(v, 7)
      do i6 = 1, size(v, 6)
        do i5 = 1, size(v, 5)
          do i4 = 1, size(v, 4)
            do i3 = 1, size(v, 3)
              do i2 = 1, size(v, 2)
                do i1 = 1, size(v, 1)
                  if (m(i1, i2, i3, i4, i5, i6, i7)) then
                    k = k + 1
                    v(i1, i2, i3, i4, i5, i6, i7) = int(tape(top - n + k), 4)
                  end if
                end do
              end do
            end do
          end do
        end do
      end do
    end do
    top = top - n
  end subroutine popw_i4_7

  subroutine pushp_r8_0(p)
    real(8), pointer, intent(in) :: p
    type(ptr_r8_0), allocatable :: bigger(:)
    if (.not. allocated(ptape_r8_0)) allocate(ptape_r8_0(64))
    if (ptop_r8_0 == size(ptape_r8_0)) then
      allocate(bigger(2*size(ptape_r8_0)))
      bigger(1:ptop_r8_0) = ptape_r8_0(1:ptop_r8_0)
      call move_alloc(bigger, ptape_r8_0)
    end if
    ptop_r8_0 = ptop_r8_0 + 1
    ptape_r8_0(ptop_r8_0)%p => p
    call dfort_stack_mark()
  end subroutine pushp_r8_0

  subroutine popp_r8_0(p)
    real(8), pointer, intent(inout) :: p
    call dfort_stack_unmark()
    if (ptop_r8_0 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_r8_0(ptop_r8_0)%p
    nullify(ptape_r8_0(ptop_r8_0)%p)
    ptop_r8_0 = ptop_r8_0 - 1
  end subroutine popp_r8_0

  subroutine pushp_r8_1(p)
    real(8), pointer, intent(in) :: p(:)
    type(ptr_r8_1), allocatable :: bigger(:)
    if (.not. allocated(ptape_r8_1)) allocate(ptape_r8_1(64))
    if (ptop_r8_1 == size(ptape_r8_1)) then
      allocate(bigger(2*size(ptape_r8_1)))
      bigger(1:ptop_r8_1) = ptape_r8_1(1:ptop_r8_1)
      call move_alloc(bigger, ptape_r8_1)
    end if
    ptop_r8_1 = ptop_r8_1 + 1
    ptape_r8_1(ptop_r8_1)%p => p
    call dfort_stack_mark()
  end subroutine pushp_r8_1

  subroutine popp_r8_1(p)
    real(8), pointer, intent(inout) :: p(:)
    call dfort_stack_unmark()
    if (ptop_r8_1 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_r8_1(ptop_r8_1)%p
    nullify(ptape_r8_1(ptop_r8_1)%p)
    ptop_r8_1 = ptop_r8_1 - 1
  end subroutine popp_r8_1

  subroutine pushp_r8_2(p)
    real(8), pointer, intent(in) :: p(:, :)
    type(ptr_r8_2), allocatable :: bigger(:)
    if (.not. allocated(ptape_r8_2)) allocate(ptape_r8_2(64))
    if (ptop_r8_2 == size(ptape_r8_2)) then
      allocate(bigger(2*size(ptape_r8_2)))
      bigger(1:ptop_r8_2) = ptape_r8_2(1:ptop_r8_2)
      call move_alloc(bigger, ptape_r8_2)
    end if
    ptop_r8_2 = ptop_r8_2 + 1
    ptape_r8_2(ptop_r8_2)%p => p
    call dfort_stack_mark()
  end subroutine pushp_r8_2

  subroutine popp_r8_2(p)
    real(8), pointer, intent(inout) :: p(:, :)
    call dfort_stack_unmark()
    if (ptop_r8_2 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_r8_2(ptop_r8_2)%p
    nullify(ptape_r8_2(ptop_r8_2)%p)
    ptop_r8_2 = ptop_r8_2 - 1
  end subroutine popp_r8_2

  subroutine pushp_r8_3(p)
    real(8), pointer, intent(in) :: p(:, :, :)
    type(ptr_r8_3), allocatable :: bigger(:)
    if (.not. allocated(ptape_r8_3)) allocate(ptape_r8_3(64))
    if (ptop_r8_3 == size(ptape_r8_3)) then
      allocate(bigger(2*size(ptape_r8_3)))
      bigger(1:ptop_r8_3) = ptape_r8_3(1:ptop_r8_3)
      call move_alloc(bigger, ptape_r8_3)
    end if
    ptop_r8_3 = ptop_r8_3 + 1
    ptape_r8_3(ptop_r8_3)%p => p
    call dfort_stack_mark()
  end subroutine pushp_r8_3

  subroutine popp_r8_3(p)
    real(8), pointer, intent(inout) :: p(:, :, :)
    call dfort_stack_unmark()
    if (ptop_r8_3 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_r8_3(ptop_r8_3)%p
    nullify(ptape_r8_3(ptop_r8_3)%p)
    ptop_r8_3 = ptop_r8_3 - 1
  end subroutine popp_r8_3

  subroutine pushp_r4_0(p)
    real(4), pointer, intent(in) :: p
    type(ptr_r4_0), allocatable :: bigger(:)
    if (.not. allocated(ptape_r4_0)) allocate(ptape_r4_0(64))
    if (ptop_r4_0 == size(ptape_r4_0)) then
      allocate(bigger(2*size(ptape_r4_0)))
      bigger(1:ptop_r4_0) = ptape_r4_0(1:ptop_r4_0)
      call move_alloc(bigger, ptape_r4_0)
    end if
    ptop_r4_0 = ptop_r4_0 + 1
    ptape_r4_0(ptop_r4_0)%p => p
    call dfort_stack_mark()
  end subroutine pushp_r4_0

  subroutine popp_r4_0(p)
    real(4), pointer, intent(inout) :: p
    call dfort_stack_unmark()
    if (ptop_r4_0 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_r4_0(ptop_r4_0)%p
    nullify(ptape_r4_0(ptop_r4_0)%p)
    ptop_r4_0 = ptop_r4_0 - 1
  end subroutine popp_r4_0

  subroutine pushp_r4_1(p)
    real(4), pointer, intent(in) :: p(:)
    type(ptr_r4_1), allocatable :: bigger(:)
    if (.not. allocated(ptape_r4_1)) allocate(ptape_r4_1(64))
    if (ptop_r4_1 == size(ptape_r4_1)) then
      allocate(bigger(2*size(ptape_r4_1)))
      bigger(1:ptop_r4_1) = ptape_r4_1(1:ptop_r4_1)
      call move_alloc(bigger, ptape_r4_1)
    end if
    ptop_r4_1 = ptop_r4_1 + 1
    ptape_r4_1(ptop_r4_1)%p => p
    call dfort_stack_mark()
  end subroutine pushp_r4_1

  subroutine popp_r4_1(p)
    real(4), pointer, intent(inout) :: p(:)
    call dfort_stack_unmark()
    if (ptop_r4_1 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_r4_1(ptop_r4_1)%p
    nullify(ptape_r4_1(ptop_r4_1)%p)
    ptop_r4_1 = ptop_r4_1 - 1
  end subroutine popp_r4_1

  subroutine pushp_r4_2(p)
    real(4), pointer, intent(in) :: p(:, :)
    type(ptr_r4_2), allocatable :: bigger(:)
    if (.not. allocated(ptape_r4_2)) allocate(ptape_r4_2(64))
    if (ptop_r4_2 == size(ptape_r4_2)) then
      allocate(bigger(2*size(ptape_r4_2)))
      bigger(1:ptop_r4_2) = ptape_r4_2(1:ptop_r4_2)
      call move_alloc(bigger, ptape_r4_2)
    end if
    ptop_r4_2 = ptop_r4_2 + 1
    ptape_r4_2(ptop_r4_2)%p => p
    call dfort_stack_mark()
  end subroutine pushp_r4_2

  subroutine popp_r4_2(p)
    real(4), pointer, intent(inout) :: p(:, :)
    call dfort_stack_unmark()
    if (ptop_r4_2 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_r4_2(ptop_r4_2)%p
    nullify(ptape_r4_2(ptop_r4_2)%p)
    ptop_r4_2 = ptop_r4_2 - 1
  end subroutine popp_r4_2

  subroutine pushp_r4_3(p)
    real(4), pointer, intent(in) :: p(:, :, :)
    type(ptr_r4_3), allocatable :: bigger(:)
    if (.not. allocated(ptape_r4_3)) allocate(ptape_r4_3(64))
    if (ptop_r4_3 == size(ptape_r4_3)) then
      allocate(bigger(2*size(ptape_r4_3)))
      bigger(1:ptop_r4_3) = ptape_r4_3(1:ptop_r4_3)
      call move_alloc(bigger, ptape_r4_3)
    end if
    ptop_r4_3 = ptop_r4_3 + 1
    ptape_r4_3(ptop_r4_3)%p => p
    call dfort_stack_mark()
  end subroutine pushp_r4_3

  subroutine popp_r4_3(p)
    real(4), pointer, intent(inout) :: p(:, :, :)
    call dfort_stack_unmark()
    if (ptop_r4_3 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_r4_3(ptop_r4_3)%p
    nullify(ptape_r4_3(ptop_r4_3)%p)
    ptop_r4_3 = ptop_r4_3 - 1
  end subroutine popp_r4_3

  subroutine pushp_i4_0(p)
    integer(4), pointer, intent(in) :: p
    type(ptr_i4_0), allocatable :: bigger(:)
    if (.not. allocated(ptape_i4_0)) allocate(ptape_i4_0(64))
    if (ptop_i4_0 == size(ptape_i4_0)) then
      allocate(bigger(2*size(ptape_i4_0)))
      bigger(1:ptop_i4_0) = ptape_i4_0(1:ptop_i4_0)
      call move_alloc(bigger, ptape_i4_0)
    end if
    ptop_i4_0 = ptop_i4_0 + 1
    ptape_i4_0(ptop_i4_0)%p => p
    call dfort_stack_mark()
  end subroutine pushp_i4_0

  subroutine popp_i4_0(p)
    integer(4), pointer, intent(inout) :: p
    call dfort_stack_unmark()
    if (ptop_i4_0 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_i4_0(ptop_i4_0)%p
    nullify(ptape_i4_0(ptop_i4_0)%p)
    ptop_i4_0 = ptop_i4_0 - 1
  end subroutine popp_i4_0

  subroutine pushp_i4_1(p)
    integer(4), pointer, intent(in) :: p(:)
    type(ptr_i4_1), allocatable :: bigger(:)
    if (.not. allocated(ptape_i4_1)) allocate(ptape_i4_1(64))
    if (ptop_i4_1 == size(ptape_i4_1)) then
      allocate(bigger(2*size(ptape_i4_1)))
      bigger(1:ptop_i4_1) = ptape_i4_1(1:ptop_i4_1)
      call move_alloc(bigger, ptape_i4_1)
    end if
    ptop_i4_1 = ptop_i4_1 + 1
    ptape_i4_1(ptop_i4_1)%p => p
    call dfort_stack_mark()
  end subroutine pushp_i4_1

  subroutine popp_i4_1(p)
    integer(4), pointer, intent(inout) :: p(:)
    call dfort_stack_unmark()
    if (ptop_i4_1 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_i4_1(ptop_i4_1)%p
    nullify(ptape_i4_1(ptop_i4_1)%p)
    ptop_i4_1 = ptop_i4_1 - 1
  end subroutine popp_i4_1

  subroutine pushp_i4_2(p)
    integer(4), pointer, intent(in) :: p(:, :)
    type(ptr_i4_2), allocatable :: bigger(:)
    if (.not. allocated(ptape_i4_2)) allocate(ptape_i4_2(64))
    if (ptop_i4_2 == size(ptape_i4_2)) then
      allocate(bigger(2*size(ptape_i4_2)))
      bigger(1:ptop_i4_2) = ptape_i4_2(1:ptop_i4_2)
      call move_alloc(bigger, ptape_i4_2)
    end if
    ptop_i4_2 = ptop_i4_2 + 1
    ptape_i4_2(ptop_i4_2)%p => p
    call dfort_stack_mark()
  end subroutine pushp_i4_2

  subroutine popp_i4_2(p)
    integer(4), pointer, intent(inout) :: p(:, :)
    call dfort_stack_unmark()
    if (ptop_i4_2 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_i4_2(ptop_i4_2)%p
    nullify(ptape_i4_2(ptop_i4_2)%p)
    ptop_i4_2 = ptop_i4_2 - 1
  end subroutine popp_i4_2

  subroutine pushp_i4_3(p)
    integer(4), pointer, intent(in) :: p(:, :, :)
    type(ptr_i4_3), allocatable :: bigger(:)
    if (.not. allocated(ptape_i4_3)) allocate(ptape_i4_3(64))
    if (ptop_i4_3 == size(ptape_i4_3)) then
      allocate(bigger(2*size(ptape_i4_3)))
      bigger(1:ptop_i4_3) = ptape_i4_3(1:ptop_i4_3)
      call move_alloc(bigger, ptape_i4_3)
    end if
    ptop_i4_3 = ptop_i4_3 + 1
    ptape_i4_3(ptop_i4_3)%p => p
    call dfort_stack_mark()
  end subroutine pushp_i4_3

  subroutine popp_i4_3(p)
    integer(4), pointer, intent(inout) :: p(:, :, :)
    call dfort_stack_unmark()
    if (ptop_i4_3 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_i4_3(ptop_i4_3)%p
    nullify(ptape_i4_3(ptop_i4_3)%p)
    ptop_i4_3 = ptop_i4_3 - 1
  end subroutine popp_i4_3

  subroutine pushp_c8_0(p)
    complex(8), pointer, intent(in) :: p
    type(ptr_c8_0), allocatable :: bigger(:)
    if (.not. allocated(ptape_c8_0)) allocate(ptape_c8_0(64))
    if (ptop_c8_0 == size(ptape_c8_0)) then
      allocate(bigger(2*size(ptape_c8_0)))
      bigger(1:ptop_c8_0) = ptape_c8_0(1:ptop_c8_0)
      call move_alloc(bigger, ptape_c8_0)
    end if
    ptop_c8_0 = ptop_c8_0 + 1
    ptape_c8_0(ptop_c8_0)%p => p
    call dfort_stack_mark()
  end subroutine pushp_c8_0

  subroutine popp_c8_0(p)
    complex(8), pointer, intent(inout) :: p
    call dfort_stack_unmark()
    if (ptop_c8_0 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_c8_0(ptop_c8_0)%p
    nullify(ptape_c8_0(ptop_c8_0)%p)
    ptop_c8_0 = ptop_c8_0 - 1
  end subroutine popp_c8_0

  subroutine pushp_c8_1(p)
    complex(8), pointer, intent(in) :: p(:)
    type(ptr_c8_1), allocatable :: bigger(:)
    if (.not. allocated(ptape_c8_1)) allocate(ptape_c8_1(64))
    if (ptop_c8_1 == size(ptape_c8_1)) then
      allocate(bigger(2*size(ptape_c8_1)))
      bigger(1:ptop_c8_1) = ptape_c8_1(1:ptop_c8_1)
      call move_alloc(bigger, ptape_c8_1)
    end if
    ptop_c8_1 = ptop_c8_1 + 1
    ptape_c8_1(ptop_c8_1)%p => p
    call dfort_stack_mark()
  end subroutine pushp_c8_1

  subroutine popp_c8_1(p)
    complex(8), pointer, intent(inout) :: p(:)
    call dfort_stack_unmark()
    if (ptop_c8_1 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_c8_1(ptop_c8_1)%p
    nullify(ptape_c8_1(ptop_c8_1)%p)
    ptop_c8_1 = ptop_c8_1 - 1
  end subroutine popp_c8_1

  subroutine pushp_c8_2(p)
    complex(8), pointer, intent(in) :: p(:, :)
    type(ptr_c8_2), allocatable :: bigger(:)
    if (.not. allocated(ptape_c8_2)) allocate(ptape_c8_2(64))
    if (ptop_c8_2 == size(ptape_c8_2)) then
      allocate(bigger(2*size(ptape_c8_2)))
      bigger(1:ptop_c8_2) = ptape_c8_2(1:ptop_c8_2)
      call move_alloc(bigger, ptape_c8_2)
    end if
    ptop_c8_2 = ptop_c8_2 + 1
    ptape_c8_2(ptop_c8_2)%p => p
    call dfort_stack_mark()
  end subroutine pushp_c8_2

  subroutine popp_c8_2(p)
    complex(8), pointer, intent(inout) :: p(:, :)
    call dfort_stack_unmark()
    if (ptop_c8_2 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_c8_2(ptop_c8_2)%p
    nullify(ptape_c8_2(ptop_c8_2)%p)
    ptop_c8_2 = ptop_c8_2 - 1
  end subroutine popp_c8_2

  subroutine pushp_c8_3(p)
    complex(8), pointer, intent(in) :: p(:, :, :)
    type(ptr_c8_3), allocatable :: bigger(:)
    if (.not. allocated(ptape_c8_3)) allocate(ptape_c8_3(64))
    if (ptop_c8_3 == size(ptape_c8_3)) then
      allocate(bigger(2*size(ptape_c8_3)))
      bigger(1:ptop_c8_3) = ptape_c8_3(1:ptop_c8_3)
      call move_alloc(bigger, ptape_c8_3)
    end if
    ptop_c8_3 = ptop_c8_3 + 1
    ptape_c8_3(ptop_c8_3)%p => p
    call dfort_stack_mark()
  end subroutine pushp_c8_3

  subroutine popp_c8_3(p)
    complex(8), pointer, intent(inout) :: p(:, :, :)
    call dfort_stack_unmark()
    if (ptop_c8_3 < 1) error stop 'dfort_pop_pointer: no association to restore'
    p => ptape_c8_3(ptop_c8_3)%p
    nullify(ptape_c8_3(ptop_c8_3)%p)
    ptop_c8_3 = ptop_c8_3 - 1
  end subroutine popp_c8_3

  subroutine pusha_r8_1(a)
    real(8), allocatable, intent(inout) :: a(:)
    type(alc_r8_1), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_r8_1)) allocate(atape_r8_1(64))
    if (atop_r8_1 == size(atape_r8_1)) then
      allocate(bigger(2*size(atape_r8_1)))
      do k = 1, atop_r8_1
        call move_alloc(atape_r8_1(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_r8_1)
    end if
    atop_r8_1 = atop_r8_1 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_r8_1(atop_r8_1)%a)
    call dfort_stack_mark()
  end subroutine pusha_r8_1

  subroutine popa_r8_1(a)
    real(8), allocatable, intent(inout) :: a(:)
    call dfort_stack_unmark()
    if (atop_r8_1 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_r8_1(atop_r8_1)%a, a)
    atop_r8_1 = atop_r8_1 - 1
  end subroutine popa_r8_1

  subroutine pusha_r8_2(a)
    real(8), allocatable, intent(inout) :: a(:, :)
    type(alc_r8_2), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_r8_2)) allocate(atape_r8_2(64))
    if (atop_r8_2 == size(atape_r8_2)) then
      allocate(bigger(2*size(atape_r8_2)))
      do k = 1, atop_r8_2
        call move_alloc(atape_r8_2(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_r8_2)
    end if
    atop_r8_2 = atop_r8_2 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_r8_2(atop_r8_2)%a)
    call dfort_stack_mark()
  end subroutine pusha_r8_2

  subroutine popa_r8_2(a)
    real(8), allocatable, intent(inout) :: a(:, :)
    call dfort_stack_unmark()
    if (atop_r8_2 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_r8_2(atop_r8_2)%a, a)
    atop_r8_2 = atop_r8_2 - 1
  end subroutine popa_r8_2

  subroutine pusha_r8_3(a)
    real(8), allocatable, intent(inout) :: a(:, :, :)
    type(alc_r8_3), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_r8_3)) allocate(atape_r8_3(64))
    if (atop_r8_3 == size(atape_r8_3)) then
      allocate(bigger(2*size(atape_r8_3)))
      do k = 1, atop_r8_3
        call move_alloc(atape_r8_3(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_r8_3)
    end if
    atop_r8_3 = atop_r8_3 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_r8_3(atop_r8_3)%a)
    call dfort_stack_mark()
  end subroutine pusha_r8_3

  subroutine popa_r8_3(a)
    real(8), allocatable, intent(inout) :: a(:, :, :)
    call dfort_stack_unmark()
    if (atop_r8_3 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_r8_3(atop_r8_3)%a, a)
    atop_r8_3 = atop_r8_3 - 1
  end subroutine popa_r8_3

  subroutine pusha_r4_1(a)
    real(4), allocatable, intent(inout) :: a(:)
    type(alc_r4_1), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_r4_1)) allocate(atape_r4_1(64))
    if (atop_r4_1 == size(atape_r4_1)) then
      allocate(bigger(2*size(atape_r4_1)))
      do k = 1, atop_r4_1
        call move_alloc(atape_r4_1(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_r4_1)
    end if
    atop_r4_1 = atop_r4_1 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_r4_1(atop_r4_1)%a)
    call dfort_stack_mark()
  end subroutine pusha_r4_1

  subroutine popa_r4_1(a)
    real(4), allocatable, intent(inout) :: a(:)
    call dfort_stack_unmark()
    if (atop_r4_1 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_r4_1(atop_r4_1)%a, a)
    atop_r4_1 = atop_r4_1 - 1
  end subroutine popa_r4_1

  subroutine pusha_r4_2(a)
    real(4), allocatable, intent(inout) :: a(:, :)
    type(alc_r4_2), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_r4_2)) allocate(atape_r4_2(64))
    if (atop_r4_2 == size(atape_r4_2)) then
      allocate(bigger(2*size(atape_r4_2)))
      do k = 1, atop_r4_2
        call move_alloc(atape_r4_2(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_r4_2)
    end if
    atop_r4_2 = atop_r4_2 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_r4_2(atop_r4_2)%a)
    call dfort_stack_mark()
  end subroutine pusha_r4_2

  subroutine popa_r4_2(a)
    real(4), allocatable, intent(inout) :: a(:, :)
    call dfort_stack_unmark()
    if (atop_r4_2 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_r4_2(atop_r4_2)%a, a)
    atop_r4_2 = atop_r4_2 - 1
  end subroutine popa_r4_2

  subroutine pusha_r4_3(a)
    real(4), allocatable, intent(inout) :: a(:, :, :)
    type(alc_r4_3), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_r4_3)) allocate(atape_r4_3(64))
    if (atop_r4_3 == size(atape_r4_3)) then
      allocate(bigger(2*size(atape_r4_3)))
      do k = 1, atop_r4_3
        call move_alloc(atape_r4_3(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_r4_3)
    end if
    atop_r4_3 = atop_r4_3 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_r4_3(atop_r4_3)%a)
    call dfort_stack_mark()
  end subroutine pusha_r4_3

  subroutine popa_r4_3(a)
    real(4), allocatable, intent(inout) :: a(:, :, :)
    call dfort_stack_unmark()
    if (atop_r4_3 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_r4_3(atop_r4_3)%a, a)
    atop_r4_3 = atop_r4_3 - 1
  end subroutine popa_r4_3

  subroutine pusha_i4_1(a)
    integer(4), allocatable, intent(inout) :: a(:)
    type(alc_i4_1), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_i4_1)) allocate(atape_i4_1(64))
    if (atop_i4_1 == size(atape_i4_1)) then
      allocate(bigger(2*size(atape_i4_1)))
      do k = 1, atop_i4_1
        call move_alloc(atape_i4_1(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_i4_1)
    end if
    atop_i4_1 = atop_i4_1 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_i4_1(atop_i4_1)%a)
    call dfort_stack_mark()
  end subroutine pusha_i4_1

  subroutine popa_i4_1(a)
    integer(4), allocatable, intent(inout) :: a(:)
    call dfort_stack_unmark()
    if (atop_i4_1 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_i4_1(atop_i4_1)%a, a)
    atop_i4_1 = atop_i4_1 - 1
  end subroutine popa_i4_1

  subroutine pusha_i4_2(a)
    integer(4), allocatable, intent(inout) :: a(:, :)
    type(alc_i4_2), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_i4_2)) allocate(atape_i4_2(64))
    if (atop_i4_2 == size(atape_i4_2)) then
      allocate(bigger(2*size(atape_i4_2)))
      do k = 1, atop_i4_2
        call move_alloc(atape_i4_2(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_i4_2)
    end if
    atop_i4_2 = atop_i4_2 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_i4_2(atop_i4_2)%a)
    call dfort_stack_mark()
  end subroutine pusha_i4_2

  subroutine popa_i4_2(a)
    integer(4), allocatable, intent(inout) :: a(:, :)
    call dfort_stack_unmark()
    if (atop_i4_2 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_i4_2(atop_i4_2)%a, a)
    atop_i4_2 = atop_i4_2 - 1
  end subroutine popa_i4_2

  subroutine pusha_i4_3(a)
    integer(4), allocatable, intent(inout) :: a(:, :, :)
    type(alc_i4_3), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_i4_3)) allocate(atape_i4_3(64))
    if (atop_i4_3 == size(atape_i4_3)) then
      allocate(bigger(2*size(atape_i4_3)))
      do k = 1, atop_i4_3
        call move_alloc(atape_i4_3(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_i4_3)
    end if
    atop_i4_3 = atop_i4_3 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_i4_3(atop_i4_3)%a)
    call dfort_stack_mark()
  end subroutine pusha_i4_3

  subroutine popa_i4_3(a)
    integer(4), allocatable, intent(inout) :: a(:, :, :)
    call dfort_stack_unmark()
    if (atop_i4_3 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_i4_3(atop_i4_3)%a, a)
    atop_i4_3 = atop_i4_3 - 1
  end subroutine popa_i4_3

  subroutine pusha_c8_1(a)
    complex(8), allocatable, intent(inout) :: a(:)
    type(alc_c8_1), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_c8_1)) allocate(atape_c8_1(64))
    if (atop_c8_1 == size(atape_c8_1)) then
      allocate(bigger(2*size(atape_c8_1)))
      do k = 1, atop_c8_1
        call move_alloc(atape_c8_1(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_c8_1)
    end if
    atop_c8_1 = atop_c8_1 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_c8_1(atop_c8_1)%a)
    call dfort_stack_mark()
  end subroutine pusha_c8_1

  subroutine popa_c8_1(a)
    complex(8), allocatable, intent(inout) :: a(:)
    call dfort_stack_unmark()
    if (atop_c8_1 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_c8_1(atop_c8_1)%a, a)
    atop_c8_1 = atop_c8_1 - 1
  end subroutine popa_c8_1

  subroutine pusha_c8_2(a)
    complex(8), allocatable, intent(inout) :: a(:, :)
    type(alc_c8_2), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_c8_2)) allocate(atape_c8_2(64))
    if (atop_c8_2 == size(atape_c8_2)) then
      allocate(bigger(2*size(atape_c8_2)))
      do k = 1, atop_c8_2
        call move_alloc(atape_c8_2(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_c8_2)
    end if
    atop_c8_2 = atop_c8_2 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_c8_2(atop_c8_2)%a)
    call dfort_stack_mark()
  end subroutine pusha_c8_2

  subroutine popa_c8_2(a)
    complex(8), allocatable, intent(inout) :: a(:, :)
    call dfort_stack_unmark()
    if (atop_c8_2 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_c8_2(atop_c8_2)%a, a)
    atop_c8_2 = atop_c8_2 - 1
  end subroutine popa_c8_2

  subroutine pusha_c8_3(a)
    complex(8), allocatable, intent(inout) :: a(:, :, :)
    type(alc_c8_3), allocatable :: bigger(:)
    integer :: k
    if (.not. allocated(atape_c8_3)) allocate(atape_c8_3(64))
    if (atop_c8_3 == size(atape_c8_3)) then
      allocate(bigger(2*size(atape_c8_3)))
      do k = 1, atop_c8_3
        call move_alloc(atape_c8_3(k)%a, bigger(k)%a)
      end do
      call move_alloc(bigger, atape_c8_3)
    end if
    atop_c8_3 = atop_c8_3 + 1
    if (allocated(a)) pushed_bytes = pushed_bytes + int(storage_size(a), 8)/8_8*size(a, kind=8)
    call move_alloc(a, atape_c8_3(atop_c8_3)%a)
    call dfort_stack_mark()
  end subroutine pusha_c8_3

  subroutine popa_c8_3(a)
    complex(8), allocatable, intent(inout) :: a(:, :, :)
    call dfort_stack_unmark()
    if (atop_c8_3 < 1) error stop 'dfort_pop_allocation: no allocation to restore'
    if (allocated(a)) deallocate(a)
    call move_alloc(atape_c8_3(atop_c8_3)%a, a)
    atop_c8_3 = atop_c8_3 - 1
  end subroutine popa_c8_3

  !> One entry on the tape for a pointer association or an allocation
  !> kept on a stack of its own (derivative modules' stacks use it too).
  subroutine dfort_stack_mark()
    if (top + 1_8 > capacity) call grow(1_8)
    tape(top + 1) = 0_8
    call note_i(8_8, 1_8)
  end subroutine dfort_stack_mark

  subroutine dfort_stack_unmark()
    call take(1_8)
    top = top - 1
  end subroutine dfort_stack_unmark

  !> Bytes pushed since the start (or the last reset), and the peak tape
  !> size in bytes (8 bytes a slot).
  subroutine dfort_stack_stats(bytes, peak)
    integer(8), intent(out) :: bytes, peak
    bytes = pushed_bytes
    peak = 8_8*peak_words
  end subroutine dfort_stack_stats

  !> Integer entries (integers and logicals) and real entries pushed since
  !> the start (or the last reset); a scalar counts 1, an array its elements.
  subroutine dfort_stack_counts(ints, reals)
    integer(8), intent(out) :: ints, reals
    ints = pushed_ints
    reals = pushed_reals
  end subroutine dfort_stack_counts

  !> Entries on the tape now (0 once an adjoint has popped all it pushed).
  subroutine dfort_stack_depth(depth)
    integer(8), intent(out) :: depth
    depth = top + spilled
  end subroutine dfort_stack_depth

  ! Drops what was pushed since the tape held `depth` entries: the
  ! recording of a part of a root its adjoint does not reverse (the
  ! statements before the call its independents take their values after).
  subroutine dfort_stack_cut(depth)
    integer(8), intent(in) :: depth
    if (depth < 0 .or. depth > top + spilled) error stop 'dfort_stack_cut: the tape is shorter than the depth'
    do while (depth < spilled)
      call unspill()
    end do
    top = depth - spilled
  end subroutine dfort_stack_cut

  subroutine dfort_stack_reset()
    top = 0
    spilled = 0
    nblocks = 0
    pushed_bytes = 0
    peak_words = 0
    pushed_ints = 0
    pushed_reals = 0
    ckp_advanced = 0
    ckp_reversed = 0
    ptop_r8_0 = 0
    ptop_r8_1 = 0
    ptop_r8_2 = 0
    ptop_r8_3 = 0
    ptop_r4_0 = 0
    ptop_r4_1 = 0
    ptop_r4_2 = 0
    ptop_r4_3 = 0
    ptop_i4_0 = 0
    ptop_i4_1 = 0
    ptop_i4_2 = 0
    ptop_i4_3 = 0
    ptop_c8_0 = 0
    ptop_c8_1 = 0
    ptop_c8_2 = 0
    ptop_c8_3 = 0
    atop_r8_1 = 0
    atop_r8_2 = 0
    atop_r8_3 = 0
    atop_r4_1 = 0
    atop_r4_2 = 0
    atop_r4_3 = 0
    atop_i4_1 = 0
    atop_i4_2 = 0
    atop_i4_3 = 0
    atop_c8_1 = 0
    atop_c8_2 = 0
    atop_c8_3 = 0
  end subroutine dfort_stack_reset

  ! Regions (issue 19): the elements first:last:step of each dimension of
  ! the array a caller passes to a formal of explicit shape or assumed size,
  ! seen from the actual as that formal sees it (sequence association:
  ! leading extents n1 (, n2), lower bounds 1), up to the cap-th element
  ! from the actual (the callee reaches no further). A step of 0 stands for
  ! the first element alone. dfort_push_region / dfort_pop_region save and
  ! restore them; for the adjoint of an aliased actual, a buffer laid out
  ! as the view (max(cap, 1) elements) takes them (dfort_region_get)
  ! and gives them back (dfort_region_add adds, dfort_region_put copies).
  ! How many times `do i = f, e, t` runs.
  pure integer function trips(f, e, t)
    integer, intent(in) :: f, e, t
    trips = max(0, (e - f + t)/t)
  end function trips

  ! Elements o0 .. o0 + len - 1 of `a` that lie in 1 .. cap, in order:
  ! the contiguous rows of a region, one block copy each.
  subroutine push_run_r8(a, o0, len, cap)
    real(8), intent(in) :: a(*)
    integer, intent(in) :: o0, len, cap
    integer :: lo, hi
    lo = max(o0, 1)
    hi = min(o0 + len - 1, cap)
    if (hi >= lo) call push_r8s(a(lo), int(hi - lo + 1, 8))
  end subroutine push_run_r8

  subroutine pop_run_r8(a, o0, len, cap)
    real(8), intent(inout) :: a(*)
    integer, intent(in) :: o0, len, cap
    integer :: lo, hi
    lo = max(o0, 1)
    hi = min(o0 + len - 1, cap)
    if (hi >= lo) call pop_r8s(a(lo), int(hi - lo + 1, 8))
  end subroutine pop_run_r8

  subroutine region_steps(f, l, s, e, t)
    integer, intent(in) :: f, l, s
    integer, intent(out) :: e, t
    if (s == 0) then
      e = f
      t = 1
    else
      e = l
      t = s
    end if
  end subroutine region_steps

  subroutine dfort_push_region_r8_1(a, f1, l1, s1, cap)
    integer, intent(in) :: f1, l1, s1, cap
    real(8), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, o, c
    real(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    ! Contiguous: one block copy.
    if (t1 == 1) then
      call push_run_r8(a, f1, e1 - f1 + 1, cap)
      return
    end if
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
      end if
    end do
    allocate(w(c))
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
        w(c) = a(o)
      end if
    end do
    call push_r8a(w)
  end subroutine dfort_push_region_r8_1

  subroutine dfort_pop_region_r8_1(a, f1, l1, s1, cap)
    integer, intent(in) :: f1, l1, s1, cap
    real(8), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, o, c
    real(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    if (t1 == 1) then
      call pop_run_r8(a, f1, e1 - f1 + 1, cap)
      return
    end if
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
      end if
    end do
    allocate(w(c))
    call pop_r8a(w)
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
        a(o) = w(c)
      end if
    end do
  end subroutine dfort_pop_region_r8_1

  subroutine dfort_push_region_r8_2(a, n1, f1, l1, s1, f2, l2, s2, cap)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    real(8), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o, c
    real(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    ! Contiguous columns: a block copy each.
    if (t1 == 1) then
      do i2 = f2, e2, t2
        call push_run_r8(a, f1 + (i2 - 1)*m2, e1 - f1 + 1, cap)
      end do
      return
    end if
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
        end if
      end do
    end do
    allocate(w(c))
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
          w(c) = a(o)
        end if
      end do
    end do
    call push_r8a(w)
  end subroutine dfort_push_region_r8_2

  subroutine dfort_pop_region_r8_2(a, n1, f1, l1, s1, f2, l2, s2, cap)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    real(8), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o, c
    real(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    ! The columns in reverse order, as the stack gives them back.
    if (t1 == 1) then
      do c = trips(f2, e2, t2) - 1, 0, -1
        i2 = f2 + c*t2
        call pop_run_r8(a, f1 + (i2 - 1)*m2, e1 - f1 + 1, cap)
      end do
      return
    end if
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
        end if
      end do
    end do
    allocate(w(c))
    call pop_r8a(w)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
          a(o) = w(c)
        end if
      end do
    end do
  end subroutine dfort_pop_region_r8_2

  subroutine dfort_push_region_r8_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    real(8), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o, c
    real(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    if (t1 == 1) then
      do i3 = f3, e3, t3
        do i2 = f2, e2, t2
          call push_run_r8(a, f1 + (i2 - 1)*m2 + (i3 - 1)*m3, e1 - f1 + 1, cap)
        end do
      end do
      return
    end if
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
          end if
        end do
      end do
    end do
    allocate(w(c))
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
            w(c) = a(o)
          end if
        end do
      end do
    end do
    call push_r8a(w)
  end subroutine dfort_push_region_r8_3

  subroutine dfort_pop_region_r8_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    real(8), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o, c
    real(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    if (t1 == 1) then
      do o = trips(f3, e3, t3) - 1, 0, -1
        i3 = f3 + o*t3
        do c = trips(f2, e2, t2) - 1, 0, -1
          i2 = f2 + c*t2
          call pop_run_r8(a, f1 + (i2 - 1)*m2 + (i3 - 1)*m3, e1 - f1 + 1, cap)
        end do
      end do
      return
    end if
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
          end if
        end do
      end do
    end do
    allocate(w(c))
    call pop_r8a(w)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
            a(o) = w(c)
          end if
        end do
      end do
    end do
  end subroutine dfort_pop_region_r8_3

  subroutine dfort_push_region_r4_1(a, f1, l1, s1, cap)
    integer, intent(in) :: f1, l1, s1, cap
    real(4), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, o, c
    real(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
      end if
    end do
    allocate(w(c))
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
        w(c) = a(o)
      end if
    end do
    call push_r4a(w)
  end subroutine dfort_push_region_r4_1

  subroutine dfort_pop_region_r4_1(a, f1, l1, s1, cap)
    integer, intent(in) :: f1, l1, s1, cap
    real(4), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, o, c
    real(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
      end if
    end do
    allocate(w(c))
    call pop_r4a(w)
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
        a(o) = w(c)
      end if
    end do
  end subroutine dfort_pop_region_r4_1

  subroutine dfort_push_region_r4_2(a, n1, f1, l1, s1, f2, l2, s2, cap)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    real(4), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o, c
    real(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
        end if
      end do
    end do
    allocate(w(c))
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
          w(c) = a(o)
        end if
      end do
    end do
    call push_r4a(w)
  end subroutine dfort_push_region_r4_2

  subroutine dfort_pop_region_r4_2(a, n1, f1, l1, s1, f2, l2, s2, cap)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    real(4), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o, c
    real(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
        end if
      end do
    end do
    allocate(w(c))
    call pop_r4a(w)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
          a(o) = w(c)
        end if
      end do
    end do
  end subroutine dfort_pop_region_r4_2

  subroutine dfort_push_region_r4_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    real(4), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o, c
    real(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
          end if
        end do
      end do
    end do
    allocate(w(c))
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
            w(c) = a(o)
          end if
        end do
      end do
    end do
    call push_r4a(w)
  end subroutine dfort_push_region_r4_3

  subroutine dfort_pop_region_r4_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    real(4), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o, c
    real(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
          end if
        end do
      end do
    end do
    allocate(w(c))
    call pop_r4a(w)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
            a(o) = w(c)
          end if
        end do
      end do
    end do
  end subroutine dfort_pop_region_r4_3

  subroutine dfort_push_region_i4_1(a, f1, l1, s1, cap)
    integer, intent(in) :: f1, l1, s1, cap
    integer(4), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, o, c
    integer(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
      end if
    end do
    allocate(w(c))
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
        w(c) = a(o)
      end if
    end do
    call push_i4a(w)
  end subroutine dfort_push_region_i4_1

  subroutine dfort_pop_region_i4_1(a, f1, l1, s1, cap)
    integer, intent(in) :: f1, l1, s1, cap
    integer(4), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, o, c
    integer(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
      end if
    end do
    allocate(w(c))
    call pop_i4a(w)
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
        a(o) = w(c)
      end if
    end do
  end subroutine dfort_pop_region_i4_1

  subroutine dfort_push_region_i4_2(a, n1, f1, l1, s1, f2, l2, s2, cap)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    integer(4), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o, c
    integer(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
        end if
      end do
    end do
    allocate(w(c))
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
          w(c) = a(o)
        end if
      end do
    end do
    call push_i4a(w)
  end subroutine dfort_push_region_i4_2

  subroutine dfort_pop_region_i4_2(a, n1, f1, l1, s1, f2, l2, s2, cap)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    integer(4), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o, c
    integer(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
        end if
      end do
    end do
    allocate(w(c))
    call pop_i4a(w)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
          a(o) = w(c)
        end if
      end do
    end do
  end subroutine dfort_pop_region_i4_2

  subroutine dfort_push_region_i4_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    integer(4), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o, c
    integer(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
          end if
        end do
      end do
    end do
    allocate(w(c))
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
            w(c) = a(o)
          end if
        end do
      end do
    end do
    call push_i4a(w)
  end subroutine dfort_push_region_i4_3

  subroutine dfort_pop_region_i4_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    integer(4), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o, c
    integer(4), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
          end if
        end do
      end do
    end do
    allocate(w(c))
    call pop_i4a(w)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
            a(o) = w(c)
          end if
        end do
      end do
    end do
  end subroutine dfort_pop_region_i4_3

  subroutine dfort_push_region_c8_1(a, f1, l1, s1, cap)
    integer, intent(in) :: f1, l1, s1, cap
    complex(8), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, o, c
    complex(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
      end if
    end do
    allocate(w(c))
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
        w(c) = a(o)
      end if
    end do
    call push_c8a(w)
  end subroutine dfort_push_region_c8_1

  subroutine dfort_pop_region_c8_1(a, f1, l1, s1, cap)
    integer, intent(in) :: f1, l1, s1, cap
    complex(8), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, o, c
    complex(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
      end if
    end do
    allocate(w(c))
    call pop_c8a(w)
    c = 0
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        c = c + 1
        a(o) = w(c)
      end if
    end do
  end subroutine dfort_pop_region_c8_1

  subroutine dfort_push_region_c8_2(a, n1, f1, l1, s1, f2, l2, s2, cap)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    complex(8), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o, c
    complex(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
        end if
      end do
    end do
    allocate(w(c))
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
          w(c) = a(o)
        end if
      end do
    end do
    call push_c8a(w)
  end subroutine dfort_push_region_c8_2

  subroutine dfort_pop_region_c8_2(a, n1, f1, l1, s1, f2, l2, s2, cap)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    complex(8), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o, c
    complex(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
        end if
      end do
    end do
    allocate(w(c))
    call pop_c8a(w)
    c = 0
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          c = c + 1
          a(o) = w(c)
        end if
      end do
    end do
  end subroutine dfort_pop_region_c8_2

  subroutine dfort_push_region_c8_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    complex(8), intent(in) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o, c
    complex(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
          end if
        end do
      end do
    end do
    allocate(w(c))
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
            w(c) = a(o)
          end if
        end do
      end do
    end do
    call push_c8a(w)
  end subroutine dfort_push_region_c8_3

  subroutine dfort_pop_region_c8_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    complex(8), intent(inout) :: a(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o, c
    complex(8), allocatable :: w(:)
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
          end if
        end do
      end do
    end do
    allocate(w(c))
    call pop_c8a(w)
    c = 0
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            c = c + 1
            a(o) = w(c)
          end if
        end do
      end do
    end do
  end subroutine dfort_pop_region_c8_3

  subroutine dfort_region_get_r8_1(a, f1, l1, s1, cap, w)
    integer, intent(in) :: f1, l1, s1, cap
    real(8), intent(in) :: a(*)
    real(8), intent(inout) :: w(*)
    integer :: e1, t1, i1, m1, o
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        w(o) = a(o)
      end if
    end do
  end subroutine dfort_region_get_r8_1

  subroutine dfort_region_add_r8_1(a, f1, l1, s1, cap, w)
    integer, intent(in) :: f1, l1, s1, cap
    real(8), intent(inout) :: a(*)
    real(8), intent(in) :: w(*)
    integer :: e1, t1, i1, m1, o
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        a(o) = a(o) + w(o)
      end if
    end do
  end subroutine dfort_region_add_r8_1

  subroutine dfort_region_put_r8_1(a, f1, l1, s1, cap, w)
    integer, intent(in) :: f1, l1, s1, cap
    real(8), intent(inout) :: a(*)
    real(8), intent(in) :: w(*)
    integer :: e1, t1, i1, m1, o
    call region_steps(f1, l1, s1, e1, t1)
    m1 = 1
    do i1 = f1, e1, t1
      o = 1 + (i1 - 1)*m1
      if (o >= 1 .and. o <= cap) then
        a(o) = w(o)
      end if
    end do
  end subroutine dfort_region_put_r8_1

  subroutine dfort_region_get_r8_2(a, n1, f1, l1, s1, f2, l2, s2, cap, w)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    real(8), intent(in) :: a(*)
    real(8), intent(inout) :: w(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          w(o) = a(o)
        end if
      end do
    end do
  end subroutine dfort_region_get_r8_2

  subroutine dfort_region_add_r8_2(a, n1, f1, l1, s1, f2, l2, s2, cap, w)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    real(8), intent(inout) :: a(*)
    real(8), intent(in) :: w(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          a(o) = a(o) + w(o)
        end if
      end do
    end do
  end subroutine dfort_region_add_r8_2

  subroutine dfort_region_put_r8_2(a, n1, f1, l1, s1, f2, l2, s2, cap, w)
    integer, intent(in) :: n1, f1, l1, s1, f2, l2, s2, cap
    real(8), intent(inout) :: a(*)
    real(8), intent(in) :: w(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, o
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    m1 = 1
    m2 = m1*max(n1, 1)
    do i2 = f2, e2, t2
      do i1 = f1, e1, t1
        o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2
        if (o >= 1 .and. o <= cap) then
          a(o) = w(o)
        end if
      end do
    end do
  end subroutine dfort_region_put_r8_2

  subroutine dfort_region_get_r8_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap, w)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    real(8), intent(in) :: a(*)
    real(8), intent(inout) :: w(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            w(o) = a(o)
          end if
        end do
      end do
    end do
  end subroutine dfort_region_get_r8_3

  subroutine dfort_region_add_r8_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap, w)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    real(8), intent(inout) :: a(*)
    real(8), intent(in) :: w(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            a(o) = a(o) + w(o)
          end if
        end do
      end do
    end do
  end subroutine dfort_region_add_r8_3

  subroutine dfort_region_put_r8_3(a, n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap, w)
    integer, intent(in) :: n1, n2, f1, l1, s1, f2, l2, s2, f3, l3, s3, cap
    real(8), intent(inout) :: a(*)
    real(8), intent(in) :: w(*)
    integer :: e1, t1, i1, m1, e2, t2, i2, m2, e3, t3, i3, m3, o
    call region_steps(f1, l1, s1, e1, t1)
    call region_steps(f2, l2, s2, e2, t2)
    call region_steps(f3, l3, s3, e3, t3)
    m1 = 1
    m2 = m1*max(n1, 1)
    m3 = m2*max(n2, 1)
    do i3 = f3, e3, t3
      do i2 = f2, e2, t2
        do i1 = f1, e1, t1
          o = 1 + (i1 - 1)*m1 + (i2 - 1)*m2 + (i3 - 1)*m3
          if (o >= 1 .and. o <= cap) then
            a(o) = w(o)
          end if
        end do
      end do
    end do
  end subroutine dfort_region_put_r8_3

  ! Binomial checkpointing of a loop of n steps with s snapshots (Griewank's
  ! Revolve schedule, as a recursion): to reverse steps a..e-1 from the
  ! state at a (whose snapshot is the latest), advance j steps, take a
  ! snapshot, reverse a+j..e-1 with s-1 snapshots, drop that snapshot,
  ! restore the one of a, and reverse a..a+j-1 with s. j (ckp_split) makes
  ! the steps run again minimal: t(n,s) = r*n - C(s+r, r-1). A plan is the
  ! caller's integer array: plan(1) items pending, then 4 integers each
  ! (what, a, e, s). dfort_ckp_next returns the next action: 0 done,
  ! 1 advance from step `from` to `to` (steps from..to-1, numbered from 0),
  ! 2 take a snapshot, 3 restore the latest, 4 drop the latest, 5 run
  ! step `from` with recording and reverse it.
  subroutine dfort_ckp_start(plan, n, s)
    integer, allocatable, intent(inout) :: plan(:)
    integer, intent(in) :: n, s
    if (allocated(plan)) deallocate(plan)
    allocate(plan(1 + 4*(3*max(s, 1) + 8)))
    plan(1) = 0
    call ckp_item(plan, 0, 0, n, max(s, 1))
  end subroutine dfort_ckp_start

  subroutine ckp_item(plan, what, a, e, s)
    integer, allocatable, intent(inout) :: plan(:)
    integer, intent(in) :: what, a, e, s
    integer, allocatable :: more(:)
    integer :: at
    at = 1 + 4*plan(1)
    if (at + 4 > size(plan)) then
      allocate(more(2*size(plan)))
      more(1:size(plan)) = plan
      call move_alloc(more, plan)
    end if
    plan(at + 1) = what
    plan(at + 2) = a
    plan(at + 3) = e
    plan(at + 4) = s
    plan(1) = plan(1) + 1
  end subroutine ckp_item

  ! C(s + r, s), or 0 for r < 0.
  integer(8) function ckp_beta(s, r)
    integer(8), intent(in) :: s, r
    integer(8) :: i
    ckp_beta = 0
    if (r < 0) return
    ckp_beta = 1
    do i = 1, r
      ckp_beta = ckp_beta*(s + i)/i
    end do
  end function ckp_beta

  ! Where to take the next snapshot reversing n >= 2 steps with s >= 2.
  integer function ckp_split(n, s)
    integer, intent(in) :: n, s
    integer(8) :: r, n8, s8, j
    n8 = n
    s8 = s
    r = 0
    do while (ckp_beta(s8, r) < n8)
      r = r + 1
    end do
    j = max(1_8, n8 - ckp_beta(s8 - 1, r), ckp_beta(s8, r - 2))
    ckp_split = int(min(j, n8 - 1))
  end function ckp_split

  subroutine dfort_ckp_next(plan, action, from, to)
    integer, allocatable, intent(inout) :: plan(:)
    integer, intent(out) :: action, from, to
    integer :: what, a, e, s, j, at
    action = 0
    from = 0
    to = 0
    do
      if (plan(1) == 0) then
        deallocate(plan)
        return
      end if
      at = 1 + 4*(plan(1) - 1)
      what = plan(at + 1)
      a = plan(at + 2)
      e = plan(at + 3)
      s = plan(at + 4)
      plan(1) = plan(1) - 1
      if (what /= 0) then
        action = what
        from = a
        if (what == 5) ckp_reversed = ckp_reversed + 1
        return
      end if
      if (e - a <= 0) cycle
      if (e - a == 1) then
        action = 5
        from = a
        ckp_reversed = ckp_reversed + 1
        return
      end if
      if (s <= 1) then
        j = e - a - 1
        call ckp_item(plan, 0, a, e - 1, 1)
        call ckp_item(plan, 3, 0, 0, 0)
        call ckp_item(plan, 5, e - 1, e, 0)
      else
        j = ckp_split(e - a, s)
        call ckp_item(plan, 0, a, a + j, s)
        call ckp_item(plan, 3, 0, 0, 0)
        call ckp_item(plan, 4, 0, 0, 0)
        call ckp_item(plan, 0, a + j, e, s - 1)
        call ckp_item(plan, 2, a + j, 0, 0)
      end if
      action = 1
      from = a
      to = a + j
      ckp_advanced = ckp_advanced + j
      return
    end do
  end subroutine dfort_ckp_next

  !> Steps binomial checkpointing ran again without recording, and steps it
  !> ran with recording and reversed, since the start.
  subroutine dfort_ckp_stats(advanced, reversed)
    integer(8), intent(out) :: advanced, reversed
    advanced = ckp_advanced
    reversed = ckp_reversed
  end subroutine dfort_ckp_stats

end module dfort_stack
