"""Layout conversions through shared memory move runs of adjacent elements as one vector."""

from tilelab.compiler.layouts import vector_run


def test_four_adjacent_halves_move_as_one_64_bit_access():
    assert vector_run([0, 1, 2, 3, 64, 65, 66, 67], [4, 8], 16) == 4


def test_runs_stop_at_128_bits():
    assert vector_run(list(range(16)), [16, 32], 32) == 4


def test_negative_a_thread_offset_that_breaks_alignment_gives_scalars():
    assert vector_run([0, 1, 2, 3], [2], 16) == 2
    assert vector_run([0, 1, 2, 3], [1], 16) == 1


def test_negative_non_adjacent_registers_give_scalars():
    assert vector_run([0, 8, 16, 24], [1, 2], 16) == 1
