"""Which `__consumer_offsets` partition coordinates a group (`GroupMetadataManager.partitionFor`)."""

from __future__ import annotations

from actors.group.placement import java_string_hash_code, partition_for, utils_abs


def test_my_group_hashes_to_partition_12_of_50() -> None:
    """"my-group".hashCode is -1906497762, and 1906497762 % 50 = 12."""
    assert java_string_hash_code("my-group") == -1906497762
    assert partition_for("my-group", 50) == 12


def test_a_hash_of_integer_min_value_maps_to_partition_0() -> None:
    """`Utils.abs(Integer.MIN_VALUE)` is 0, where `Math.abs` would stay negative:
    "polygenelubricants".hashCode is exactly Integer.MIN_VALUE."""
    assert java_string_hash_code("polygenelubricants") == -(2**31)
    assert utils_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants", 50) == 0


def test_the_hash_wraps_at_32_bits_and_counts_utf16_units() -> None:
    """Java's `String.hashCode` wraps like an int and runs over UTF-16 code units, so a character
    outside the BMP counts as its two surrogates (U+1F600 is \\ud83d\\ude00)."""
    assert java_string_hash_code("") == 0
    assert java_string_hash_code("a") == 97
    assert java_string_hash_code("\U0001f600") == 31 * 0xD83D + 0xDE00
