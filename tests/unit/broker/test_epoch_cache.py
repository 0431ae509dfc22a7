"""The leader-epoch cache and truncation rule, with the values of `LeaderEpochFileCache` and the canonical scenarios."""

from __future__ import annotations

import pytest

from actors.broker.epoch_cache import EpochCache, EpochEntry, TruncationState, truncation_state

UNDEF = EpochEntry(-1, -1)


def cache(*entries: tuple[int, int]) -> EpochCache:
    return EpochCache(tuple(EpochEntry(*e) for e in entries))


@pytest.mark.parametrize(
    ("entries", "requested", "leo", "expected"),
    [
        # the latest epoch: (it, LEO)
        (((0, 0), (1, 1)), 1, 5, (1, 5)),
        # an older epoch: (largest <= requested, start of the next higher)
        (((0, 0), (1, 1)), 0, 5, (0, 1)),
        (((0, 0), (2, 4), (5, 7)), 3, 9, (2, 7)),
        # nothing <= requested: (requested, start of the first higher)
        (((3, 10), (4, 12)), 1, 20, (1, 10)),
        # beyond every epoch, UNDEFINED, or an empty cache
        (((0, 0),), 3, 5, (-1, -1)),
        (((0, 0),), -1, 5, (-1, -1)),
        ((), 0, 5, (-1, -1)),
    ],
)
def test_end_offset_for(entries: tuple[tuple[int, int], ...], requested: int, leo: int, expected: tuple[int, int]) -> None:
    assert cache(*entries).end_offset_for(requested, leo) == expected


def test_assign_appends_a_new_epoch_and_ignores_a_repeat() -> None:
    c = cache((0, 0)).assign(1, 1)
    assert c == cache((0, 0), (1, 1))
    assert c.assign(1, 3) is c
    assert c.latest_epoch == 1


def test_assign_replaces_entries_at_or_beyond_the_new_start() -> None:
    assert cache((0, 0), (1, 5), (2, 8)).assign(3, 5) == cache((0, 0), (3, 5))


def test_truncate_from_end_drops_epochs_starting_at_or_after_the_offset() -> None:
    assert cache((0, 0), (1, 2), (2, 5)).truncate_from_end(2) == cache((0, 0))


def test_s3_follower_keeps_its_log() -> None:
    """S3: B2 [(0,0)], LEO 2; B1 answers (0, 2): truncate to min(2, 2, 2) = 2."""
    assert truncation_state(EpochEntry(0, 2), cache((0, 0)), 2, 1) == TruncationState(2, True)


def test_s5_follower_truncates_the_diverged_record() -> None:
    """S5: B2's cache [(0,0),(1,1)] answers divergingEpoch (0, 1); B1 has [(0,0)], LEO 2."""
    assert truncation_state(EpochEntry(0, 1), cache((0, 0)), 2, 2) == TruncationState(1, True)


def test_s7_old_leader_truncates_to_the_unclean_leaders_epoch_start() -> None:
    """S7: B1 [(5, x)] LEO 10 gets diverging (5, 5)."""
    assert truncation_state(EpochEntry(5, 5), cache((0, 0), (5, 3)), 10, 10) == TruncationState(5, True)


def test_kip_279_loop_when_the_follower_lacks_the_leaders_epoch() -> None:
    """The leader answers epoch 1, which the follower never saw ([(0,0),(2,3)]): truncate to
    the end of epoch 0 (3) and ask again."""
    follower = cache((0, 0), (2, 3))
    assert truncation_state(EpochEntry(1, 4), follower, 6, 0) == TruncationState(3, False)


def test_undefined_answer_falls_back_to_the_fetch_offset() -> None:
    assert truncation_state(UNDEF, cache((0, 0)), 5, 3) == TruncationState(3, True)
