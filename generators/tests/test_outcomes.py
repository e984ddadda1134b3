"""Outcome sets: impairments -> planned losses -> every terminal outcome TLC
reaches with exactly those losses (specs/ltp/MCLTPOutcomes.tla)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.core.contract import Delivery
from conformance.core.errors import ToolMissing
from conformance.core.types import Direction, FieldValue, Impairment
from conformance.protocols.ltp import LtpBlock, LtpDelivery
from generators import outcomes as common
from generators.ltp import outcomes
from generators.tlc import find_jar

BLOCK = LtpBlock(block_len=4000, red_len=3000, segment_size=1000)


def _drop(
    direction: Direction, occurrence: int = 1, count: int = 1, **match: FieldValue
) -> Impairment:
    return Impairment(
        direction=direction,
        match=match,
        occurrence=occurrence,
        count=count,
    )


def _ltp_delivery(d: Delivery) -> LtpDelivery:
    """An LTP outcome's delivery, with its counters' type."""
    assert isinstance(d, LtpDelivery), d
    return d


def test_plan_names_losses_as_the_channel_does():
    plan = outcomes.plan(
        [
            _drop("return", type="RS"),
            _drop("forward", 2, 2, kind="red_data", offset=2000),
        ],
        BLOCK,
    )
    assert plan == [
        common.PlannedLoss("return", "RS", 0, 1),
        common.PlannedLoss("forward", "red_data", 2, 2),
        common.PlannedLoss("forward", "red_data", 2, 3),
    ]
    delayed = Impairment(direction="forward", match={"type": "RA"}, action="delay", delay_ms=9)
    doubled = Impairment(direction="return", match={"type": "RS"}, occurrence=2, action="duplicate")
    assert outcomes.plan([delayed, doubled], BLOCK) == [
        common.PlannedLoss("forward", "RA", 0, 1, "delay"),
        common.PlannedLoss("return", "RS", 0, 2, "duplicate"),
    ]
    text = outcomes.plan_module(plan, in_order=True)
    assert 'key |-> "red_data", off |-> 2, occ |-> 3, act |-> "drop"' in text
    assert "InOrder == TRUE" in text


@pytest.mark.parametrize(
    ("imp", "why"),
    [
        (_drop("return", checkpoint=True), "not one the model names"),
        (_drop("forward", kind="red_data", offset=500), "not at a segment boundary"),
        (
            Impairment(direction="return", match={"type": "RS"}, action="corrupt"),
            "corrupt has no counterpart",
        ),
    ],
)
def test_unplannable_impairments_say_why(imp: Impairment, why: str):
    with pytest.raises(common.Unplannable, match=why):
        outcomes.plan([imp], BLOCK)


def test_green_segments_are_planned_from_the_red_parts_end():
    """The ns-3 LTP paper's geometry: 1500 red bytes in 1461-byte segments,
    so the green segments start at 1500, 2961 and 4422 (RFC 5326 §2 (4):
    the green-part begins at the octet following the end of the red-part;
    the tester cuts it from red_len), not at multiples of the segment size."""
    block = LtpBlock(block_len=5000, red_len=1500, segment_size=1461)
    imps = [
        _drop("forward", kind="red_data", holds=1461),
        _drop("forward", kind="green_data", holds=2961),
    ]
    plan = outcomes.plan(imps, block)
    # the model's indices: red 0-1, green 2-4
    assert [(p.key, p.off) for p in plan] == [("red_data", 1), ("green_data", 3)]
    back = [outcomes.impairment_of(p, block) for p in plan]
    # named back by the byte generated scenarios use: the red part's last
    # segment (its checkpoint) by the part's last byte, a middle one by its first
    assert [dict(i.match) for i in back] == [
        {"kind": "red_data", "holds": 1499},
        {"kind": "green_data", "holds": 2961},
    ]
    assert outcomes.plan(back, block) == plan
    # an offset names the same segments on the scenario's grid
    by_offset = [_drop("forward", kind="red_data", offset=1461),
                 _drop("forward", kind="green_data", offset=2961)]  # fmt: skip
    assert outcomes.plan(by_offset, block) == plan
    for bad in (2922, 1461):  # a red-part multiple of the size, and red's own offset
        with pytest.raises(common.Unplannable, match="green part"):
            outcomes.plan([_drop("forward", kind="green_data", offset=bad)], block)


def test_a_byte_names_the_segment_holding_it_whatever_the_grid():
    """``holds``: the data segment whose range holds a byte. On the model's
    grid that is the segment the byte falls in, so an implementation that
    cuts the block elsewhere (ION counts its header in the segment size)
    meets a loss the model can plan."""
    plan = outcomes.plan(
        [
            _drop("forward", kind="red_data", holds=2999),
            _drop("forward", kind="green_data", holds=3000),
            _drop("forward", kind="red_data", holds=1012),
        ],
        BLOCK,
    )
    assert [(p.key, p.off) for p in plan] == [("red_data", 2), ("green_data", 3), ("red_data", 1)]
    for kind, byte in (("red_data", 3000), ("green_data", 2999), ("green_data", 4000)):
        with pytest.raises(common.Unplannable, match="is not in the block's"):
            outcomes.plan([_drop("forward", kind=kind, holds=byte)], BLOCK)


def test_outcome_lines_become_byte_counts():
    block = LtpBlock(block_len=3500, red_len=2000, segment_size=1000)  # last green is 500 B
    text = (
        "dtnc-outcome sender=completed receiver=completed delivered=1 green={2, 3}\n"
        "noise\n"
        '"dtnc-outcome sender=cancelled receiver=none delivered=0 green={}"\n'
        "dtnc-outcome sender=completed receiver=completed delivered=1 green={2, 3}\n"
    )
    got = {o.key() for o in outcomes.parse_outcomes(text, block)}
    assert got == {(2000, 1500, "completed", "completed"), (0, 0, "cancelled", "open")}


@pytest.fixture
def tlc() -> None:
    try:
        find_jar()
    except ToolMissing as exc:
        pytest.skip(str(exc))


@pytest.mark.integration
def test_nominal_allows_only_completion(tlc: None, tmp_path: Path):
    """No loss, in-order channels: both sides complete; the green EOB may meet
    a receiver that already closed on the RA (RFC 5326 §6.14), so the green
    bytes are 1000 or 0; nothing is cancelled."""
    got = outcomes.outcome_set(BLOCK, [], tmp_path)
    assert {o.key() for o in got.outcomes} == {
        (3000, 1000, "completed", "completed"),
        (3000, 0, "completed", "completed"),
    }
    assert got.log.is_file()


@pytest.mark.integration
def test_reordering_channels_allow_more(tlc: None, tmp_path: Path):
    """With the set semantics (a reordering channel), a retransmitted
    checkpoint can reach a receiver that already closed, and the sender
    cancels without any loss: in order, that cannot happen."""
    fifo = outcomes.outcome_set(BLOCK, [], tmp_path / "fifo")
    sets = outcomes.outcome_set(BLOCK, [], tmp_path / "set", in_order=False)
    assert {o.key() for o in fifo.outcomes} < {o.key() for o in sets.outcomes}
    assert any(o.sender_outcome == "cancelled" for o in sets.outcomes)


@pytest.mark.integration
def test_a_duplicated_checkpoint_counts_against_the_report_limit(tlc: None, tmp_path: Path):
    """The RA lost alone: the RS timer resends the RS once (limit 1) and the
    session completes. With the checkpoint also duplicated by the channel,
    the copy is a redundant checkpoint that queues the RS again (RFC 5326
    §6.8 b), so the RS timer that follows the lost RA finds the limit
    exceeded and the receiver may cancel: an outcome that only a channel
    that duplicates can reach (LTP.tla's ChannelDuplicateForward)."""
    cp: dict[str, FieldValue] = {"kind": "red_data", "offset": 2000}
    ra = _drop("forward", type="RA")
    alone = outcomes.outcome_set(BLOCK, [ra], tmp_path / "alone")
    dup = Impairment(direction="forward", match=cp, action="duplicate")
    both = outcomes.outcome_set(BLOCK, [ra, dup], tmp_path / "both")
    assert {(o.sender_outcome, o.receiver_outcome) for o in alone.outcomes} == {
        ("completed", "completed")
    }
    assert {o.key() for o in alone.outcomes} < {o.key() for o in both.outcomes}
    assert ("completed", "cancelled") in {
        (o.sender_outcome, o.receiver_outcome) for o in both.outcomes
    }


@pytest.mark.integration
def test_every_checkpoint_lost_cancels_both_sides(tlc: None, tmp_path: Path):
    """The EORP checkpoint lost twice with a limit of 1: the sender cancels
    (6.7 RLEXC); the receiver, told by the CS, cancels too; no red part."""
    imps = [_drop("forward", 1, 2, kind="red_data", offset=2000)]
    got = outcomes.expectation(BLOCK, imps, tmp_path)
    assert {
        (_ltp_delivery(o.delivered).red_bytes_delivered, o.sender_outcome, o.receiver_outcome)
        for o in got.outcomes
    } == {(0, "cancelled", "cancelled")}
    assert "MCLTPOutcomes" in got.source


@pytest.mark.integration
def test_a_loss_that_cannot_happen_has_no_outcome(tlc: None, tmp_path: Path):
    """A 5th RS never exists with a limit of 1: no run has that loss."""
    got = outcomes.outcome_set(BLOCK, [_drop("return", 5, type="RS")], tmp_path)
    assert got.outcomes == []
    with pytest.raises(common.DtncError, match="no end"):
        outcomes.expectation(BLOCK, [_drop("return", 5, type="RS")], tmp_path / "x")


@pytest.mark.integration
def test_a_receiver_the_session_never_reached_gives_no_notice(tlc: None, tmp_path: Path):
    """Reading 11 resolved: a one-segment block lost twice (limit 1), so
    the sender cancels and its CS reaches a receiver that never saw the
    session. 8.2 has it in CLOSED, 6.17 takes "no further action": it
    acknowledges and its client sees nothing (a live run's time limit)."""
    block = LtpBlock(block_len=1000, red_len=1000, segment_size=1000)
    imps = [_drop("forward", 1, 2, kind="red_data", offset=0)]
    got = outcomes.expectation(block, imps, tmp_path)
    assert {(o.sender_outcome, o.receiver_outcome) for o in got.outcomes} == {("cancelled", "open")}


@pytest.mark.integration
def test_a_green_only_block_closes_at_its_eob(tlc: None, tmp_path: Path):
    """A block with no red part (RFC 5326 §8.2's "fully green" session):
    the sender completes once all is sent (§6.12: the red part has zero
    length), and the receiver closes at the EOB with no notice under every
    reading, the data it got delivered (§7.2). A lost green segment is
    simply missing; with the EOB lost, the receiver has nothing that ends
    its session and stays open."""
    block = LtpBlock(block_len=3000, red_len=0, segment_size=1000)

    def ends(*offsets: int) -> set[tuple[str, str, int, int]]:
        imps = [_drop("forward", kind="green_data", offset=o) for o in offsets]
        got = outcomes.expectation(block, imps, tmp_path / "-".join(map(str, offsets)))
        return {
            (o.sender_outcome, o.receiver_outcome, _ltp_delivery(o.delivered).red_bytes_delivered,
             _ltp_delivery(o.delivered).green_bytes_delivered)
            for o in got.outcomes
        }  # fmt: skip

    assert ends() == {("completed", "closed", 0, 3000)}
    assert ends(0) == {("completed", "closed", 0, 2000)}
    assert ends(2000) == {("completed", "open", 0, 2000)}


@pytest.mark.integration
def test_reading_5_adds_the_receiver_that_closes_on_the_green_eob(tlc: None, tmp_path: Path):
    """A mixed block whose one red segment is lost once: the default reading
    recovers it; the alternative (GreenEobCloses) may also close the
    receiver on the green EOB with no notice, and the sender then cancels.
    Each outcome carries the readings that reach it."""
    block = LtpBlock(block_len=2000, red_len=1000, segment_size=1000)
    got = outcomes.expectation(block, [_drop("forward", kind="red_data", offset=0)], tmp_path)
    by = {(o.sender_outcome, o.receiver_outcome): o.readings for o in got.outcomes}
    assert {"", "5"} <= set(by[("completed", "completed")])
    assert by[("cancelled", "closed")] == ["5"]
    assert "reading 5 (GreenEobCloses)" in got.source


@pytest.mark.integration
def test_a_session_opened_anew_delivers_the_block_again(tlc: None, tmp_path: Path):
    """The RS lost once. A receiver that closes on its red part (reading 13)
    meets the retransmitted checkpoint closed; under reading 4 that opens a
    session anew, whose RS claims that segment only, so the sender, still
    open, resends the rest and the new record delivers the block again (RFC
    5325 §3.2): two red-part notices, 6000 red bytes (HDTN 1.3.1 does this).
    Neither reading alone, nor the default, delivers twice."""
    lost = [_drop("return", type="RS")]

    def reds(reading: str) -> set[int]:
        got = outcomes.outcome_set(BLOCK, lost, tmp_path / (reading or "default"), reading=reading)
        return {_ltp_delivery(o.delivered).red_bytes_delivered for o in got.outcomes}

    assert 6000 in reds("4+13")
    for reading in ("", "4", "13"):
        assert reds(reading) <= {0, 3000}, reading


def test_what_the_channel_does_after_the_time_limit_does_not_widen_the_set() -> None:
    """A delay change 30 s into the channel's clock makes it one that may
    reorder, and an outage at 60 s one that loses at random, but only for a
    run that can last that long: the shape reads the channel over the time
    limit (plus the guard for the channel's clock starting first)."""
    from conformance.core.types import Scenario

    def shape(limit_s: float, time_scale: float = 1.0) -> common.ChannelShape:
        scn = Scenario.model_validate(
            {
                "name": "horizon",
                "protocol": "ltp",
                "ltp": {"block_len": 2000, "red_len": 1000, "segment_size": 500},
                "time_limit_s": limit_s,
                "expect": {
                    "outcomes": [{"sender_outcome": "completed", "receiver_outcome": "completed"}]
                },
                "channel": {
                    "time_scale": time_scale,
                    "forward": {
                        "timeline": [{"t": 30, "set": {"delay_ms": 50}}],
                        "outages": [{"start": 60, "duration": 10}],
                    },
                },
            }
        )
        return common.channel_shape(scn)

    guard = common.HORIZON_GUARD_S
    assert (shape(20).in_order, shape(20).random_loss) == (True, False)
    assert (shape(31 - guard).in_order, shape(31 - guard).random_loss) == (False, False)
    assert shape(31 - guard).why == "forward delay changes over time"
    assert (shape(60).in_order, shape(60).random_loss) == (False, True)
    # a channel clock 10 times faster brings both within a 10 s run
    assert (shape(10, 10.0).in_order, shape(10, 10.0).random_loss) == (False, True)
