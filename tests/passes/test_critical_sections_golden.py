# ruff: noqa: E501  (CHECK lines spell whole types)
"""Golden IR tests of critical-sections: inside a spin-locked section, loads go up past the pure math before them,
together with the pure ops that address them; nothing crosses a memory access, a barrier or the lock."""

from __future__ import annotations

from tilelab.compiler.passes import critical_sections

from .support import check_pass, check_unchanged

ALIASES = """
#row = #blocked<sizePerThread=[4], threadsPerWarp=[32], warpsPerCTA=[1], order=[0]>
"""

#: layer norm backward's section: the first writer stores its rows, the others add to them (ACQUIRE and
#: RELEASE replaced by the lock's spellings; BETWEEN by ops between the two loads)
SECTION = (
    ALIASES
    + """
tt.func @k(%lock: !ptr<i32>, %count: !ptr<i32>, %a: !ptr<f32>, %b: !ptr<f32>) {
  %0 = arith.constant {value = 0} : i32
  %1 = arith.constant {value = 1} : i32
  %2 = tt.make_range {start = 0, end = 128} : tensor<128xi32, #row>
  %3 = tt.splat %a : tensor<128x!ptr<f32>, #row>
  %4 = tt.addptr %3, %2 : tensor<128x!ptr<f32>, #row>
  %5 = tt.splat %b : tensor<128x!ptr<f32>, #row>
  %6 = tt.addptr %5, %2 : tensor<128x!ptr<f32>, #row>
  %7 = arith.constant {value = 1.0} : tensor<128xf32, #row>
  scf.while () -> () {
    ACQUIRE
    scf.condition %c : i1
  } do { ^bb():
    scf.yield
  }
  %8 = tt.load %count : i32
  %9 = arith.cmp eq %8, %0 : i1
  %10, %11 = scf.if %9 -> (tensor<128xf32, #row>, tensor<128xf32, #row>) {
    %12 = tt.atomic_rmw %count, %1 {kind = "xchg", sem = "acq_rel", scope = "gpu"} : i32
    scf.yield %7, %7 : tensor<128xf32, #row>
  } else {
    %13 = tt.load %4 : tensor<128xf32, #row>
    %14 = arith.add %13, %7 : tensor<128xf32, #row>
    BETWEEN
    %15 = tt.load %6 : tensor<128xf32, #row>
    %16 = arith.add %15, %7 : tensor<128xf32, #row>
    scf.yield %14, %16 : tensor<128xf32, #row>
  }
  tt.store %4, %10 : tensor<128x!ptr<f32>, #row>
  tt.store %6, %11 : tensor<128x!ptr<f32>, #row>
  gpu.barrier
  RELEASE
  tt.return
}
"""
)

CAS = """%x = tt.atomic_cas %lock, %0, %1 {sem = "acq_rel", scope = "gpu"} : i32
    %c = arith.cmp eq %x, %1 : i1"""
XCHG = """%x = tt.atomic_rmw %lock, %1 {kind = "xchg", sem = "acq_rel", scope = "gpu"} : i32
    %c = arith.cmp ne %x, %0 : i1"""
RELEASE = """%r = tt.atomic_rmw %lock, %0 {kind = "xchg", sem = "acq_rel", scope = "gpu"} : i32"""


def section(acquire=CAS, release=RELEASE, between=""):
    return SECTION.replace("ACQUIRE", acquire).replace("RELEASE", release).replace("BETWEEN", between)


ISSUED_TOGETHER = """
    // CHECK:      } else {
    // CHECK-NEXT:   %[[A:.*]] = tt.load %{{.*}} : tensor<128xf32, #row>
    // CHECK-NEXT:   %[[B:.*]] = tt.load %{{.*}} : tensor<128xf32, #row>
    // CHECK-NEXT:   arith.add %[[A]]
    // CHECK-NEXT:   arith.add %[[B]]
    """


def test_the_rows_of_a_compare_and_swap_section_are_loaded_together():
    check_pass(critical_sections, section() + ISSUED_TOGETHER)


def test_a_test_and_set_lock_is_a_section_too():
    """``while tl.atomic_xchg(lock, 1) != 0``: the exchange takes the lock."""
    check_pass(critical_sections, section(acquire=XCHG) + ISSUED_TOGETHER)


def test_the_address_of_a_load_goes_up_with_it_in_order():
    """The second row's pointers computed between the two loads: they move up with the load, the math stays."""
    between = """%p = tt.splat %b : tensor<128x!ptr<f32>, #row>
    %q = tt.addptr %p, %2 : tensor<128x!ptr<f32>, #row>
    %m = arith.mul %14, %7 : tensor<128xf32, #row>
    %v = tt.load %q : tensor<128xf32, #row>
    %w = arith.add %v, %m : tensor<128xf32, #row>"""
    check_pass(
        critical_sections,
        section(between=between)
        + """
        // CHECK:      } else {
        // CHECK-NEXT:   tt.load
        // CHECK-NEXT:   %[[P:.*]] = tt.splat %b
        // CHECK-NEXT:   %[[Q:.*]] = tt.addptr %[[P]]
        // CHECK-NEXT:   tt.load %[[Q]]
        // CHECK-NEXT:   tt.load
        // CHECK-NEXT:   arith.add
        // CHECK-NEXT:   arith.mul
        """,
    )


def test_negative_a_load_stays_behind_a_store_or_a_barrier():
    """What the section reads and writes keeps its order: the second load may read what the store wrote."""
    for between in ("tt.store %6, %14 : tensor<128x!ptr<f32>, #row>", "gpu.barrier"):
        check_unchanged(critical_sections, section(between=between))


def test_negative_no_section_without_its_release():
    """The exchange after the loop gives back another lock (the counter): the lock is never released here, so
    nothing is known to be a critical section."""
    other = RELEASE.replace("%lock", "%count")
    check_unchanged(critical_sections, section(release=other))


def test_negative_a_while_loop_that_takes_no_lock():
    """A loop whose condition is a plain load (polling a flag another program sets) acquires nothing."""
    poll = """%x = tt.load %lock {volatile = true} : i32
    %c = arith.cmp eq %x, %0 : i1"""
    check_unchanged(critical_sections, section(acquire=poll))
