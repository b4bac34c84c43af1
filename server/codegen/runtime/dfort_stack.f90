! dfort_stack: the tape of dfort's adjoints. Values pushed in the forward
! sweep are popped, last in first out, in the reverse sweep. Storage grows
! as needed (no fixed limit). dfort_stack_stats reports the bytes pushed so
! far and the peak size of the tape; dfort_stack_counts the number of
! integer entries (integers and logicals) and of real entries pushed so far
! (a scalar counts 1, an array its elements); dfort_stack_depth the number
! of entries on the tape now. Popping more than the tape holds stops the
! program with a message instead of reading past the tape.
module dfort_stack
  implicit none
  private
  public :: dfort_push, dfort_pop, dfort_stack_stats, dfort_stack_reset
  public :: dfort_stack_counts, dfort_stack_depth

  integer(8), allocatable, save :: tape(:)
  integer(8), save :: top = 0
  integer(8), save :: capacity = 0
  integer(8), save :: pushed_bytes = 0
  integer(8), save :: peak_words = 0
  integer(8), save :: pushed_ints = 0
  integer(8), save :: pushed_reals = 0

  interface dfort_push
    module procedure push_r8, push_r4, push_i4, push_i8, push_l
    module procedure push_r8a, push_r4a, push_i4a, push_i8a, push_la
    module procedure push_r8a2, push_r4a2, push_i4a2, push_r8a3, push_r4a3, push_i4a3
  end interface
  interface dfort_pop
    module procedure pop_r8, pop_r4, pop_i4, pop_i8, pop_l
    module procedure pop_r8a, pop_r4a, pop_i4a, pop_i8a, pop_la
    module procedure pop_r8a2, pop_r4a2, pop_i4a2, pop_r8a3, pop_r4a3, pop_i4a3
  end interface

contains

  subroutine reserve(n)
    integer(8), intent(in) :: n
    if (top + n > capacity) call grow(n)
  end subroutine reserve

  subroutine grow(n)
    integer(8), intent(in) :: n
    integer(8), allocatable :: bigger(:)
    if (.not. allocated(tape)) then
      capacity = max(1024_8, n)
      allocate(tape(capacity))
      return
    end if
    capacity = max(2_8*capacity, top + n)
    allocate(bigger(capacity))
    bigger(1:top) = tape(1:top)
    call move_alloc(bigger, tape)
  end subroutine grow

  !> Checks that the tape holds n entries before they are popped.
  subroutine take(n)
    integer(8), intent(in) :: n
    if (n > top) error stop 'dfort_pop: the tape holds fewer values than the adjoint pops'
  end subroutine take

  subroutine note(nbytes, nwords)
    integer(8), intent(in) :: nbytes, nwords
    pushed_bytes = pushed_bytes + nbytes
    top = top + nwords
    if (top > peak_words) peak_words = top
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
    call reserve(1_8)
    tape(top + 1) = transfer(v, 0_8)
    call note_r(8_8, 1_8)
  end subroutine push_r8

  subroutine pop_r8(v)
    real(8), intent(out) :: v
    call take(1_8)
    v = transfer(tape(top), v)
    top = top - 1
  end subroutine pop_r8

  subroutine push_r4(v)
    real(4), intent(in) :: v
    call reserve(1_8)
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
    call reserve(1_8)
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
    call reserve(1_8)
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
    call reserve(1_8)
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
    integer(8) :: n, i
    n = size(v, kind=8)
    call reserve(n)
    do i = 1, n
      tape(top + i) = transfer(v(i), 0_8)
    end do
    call note_r(8_8*n, n)
  end subroutine push_r8a

  subroutine pop_r8a(v)
    real(8), intent(out) :: v(:)
    integer(8) :: n, i
    n = size(v, kind=8)
    call take(n)
    do i = 1, n
      v(i) = transfer(tape(top - n + i), v(i))
    end do
    top = top - n
  end subroutine pop_r8a

  subroutine push_r4a(v)
    real(4), intent(in) :: v(:)
    integer(8) :: n, i
    n = size(v, kind=8)
    call reserve(n)
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
    call reserve(n)
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
    call reserve(n)
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
    call reserve(n)
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

  subroutine push_r8a2(v)
    real(8), intent(in) :: v(:, :)
    call push_r8a(reshape(v, [size(v)]))
  end subroutine push_r8a2

  subroutine pop_r8a2(v)
    real(8), intent(out) :: v(:, :)
    real(8), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_r8a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_r8a2

  subroutine push_r8a3(v)
    real(8), intent(in) :: v(:, :, :)
    call push_r8a(reshape(v, [size(v)]))
  end subroutine push_r8a3

  subroutine pop_r8a3(v)
    real(8), intent(out) :: v(:, :, :)
    real(8), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_r8a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_r8a3

  subroutine push_r4a2(v)
    real(4), intent(in) :: v(:, :)
    call push_r4a(reshape(v, [size(v)]))
  end subroutine push_r4a2

  subroutine pop_r4a2(v)
    real(4), intent(out) :: v(:, :)
    real(4), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_r4a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_r4a2

  subroutine push_r4a3(v)
    real(4), intent(in) :: v(:, :, :)
    call push_r4a(reshape(v, [size(v)]))
  end subroutine push_r4a3

  subroutine pop_r4a3(v)
    real(4), intent(out) :: v(:, :, :)
    real(4), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_r4a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_r4a3

  subroutine push_i4a2(v)
    integer(4), intent(in) :: v(:, :)
    call push_i4a(reshape(v, [size(v)]))
  end subroutine push_i4a2

  subroutine pop_i4a2(v)
    integer(4), intent(out) :: v(:, :)
    integer(4), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_i4a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_i4a2

  subroutine push_i4a3(v)
    integer(4), intent(in) :: v(:, :, :)
    call push_i4a(reshape(v, [size(v)]))
  end subroutine push_i4a3

  subroutine pop_i4a3(v)
    integer(4), intent(out) :: v(:, :, :)
    integer(4), allocatable :: flat(:)
    allocate(flat(size(v)))
    call pop_i4a(flat)
    v = reshape(flat, shape(v))
  end subroutine pop_i4a3

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
    depth = top
  end subroutine dfort_stack_depth

  subroutine dfort_stack_reset()
    top = 0
    pushed_bytes = 0
    peak_words = 0
    pushed_ints = 0
    pushed_reals = 0
  end subroutine dfort_stack_reset
end module dfort_stack
