"""LibreCube's declared profile (suts/cfdp/librecube/__init__.py): what the
entity fixes, where a scenario asks otherwise, moves the scenario to what
the adapter can play; a rule it cannot keep is never moved."""

from __future__ import annotations

from suts.cfdp.librecube import LibreCube

# a test purpose's Class 2 scenario, as generators/cfdp writes its params
PURPOSE = {
    "mode": "class2",
    "checksum_type": "modular",
    "entity_id_len": 2,
    "sequence_number_len": 4,
    "nak_mode": "immediate",
    "pdu_crc": False,
}


def test_the_profile_moves_a_purpose_to_what_librecube_plays() -> None:
    lc = LibreCube()
    assert lc.supports(PURPOSE, "sender") and lc.supports(PURPOSE, "receiver")
    moved = lc.profile_changes(PURPOSE)
    assert {k: (old, new) for k, (old, new, _) in moved.items()} == {
        "entity_id_len": (2, 1),
        "sequence_number_len": (4, 1),
        "nak_mode": ("immediate", "deferred"),
    }
    assert all(why for *_, why in moved.values())
    run = PURPOSE | {k: new for k, (_, new, _) in moved.items()}
    assert lc.supports(run, "sender") == "" and lc.supports(run, "receiver") == ""


def test_each_setting_moves_only_where_librecube_plays_it() -> None:
    lc = LibreCube()
    # receiving: its sender's sequence numbers are the tester's
    assert set(lc.profile_changes(PURPOSE, ("receiver",))) == {"entity_id_len", "nak_mode"}
    # sending: the NAK mode is the receiver's
    assert set(lc.profile_changes(PURPOSE, ("sender",))) == {
        "entity_id_len",
        "sequence_number_len",
    }
    # Class 1 has no NAKs
    assert "nak_mode" not in lc.profile_changes(PURPOSE | {"mode": "class1"})


def test_what_the_profile_cannot_move_stays_unsupported() -> None:
    """Another checksum, a PDU CRC or Class 1 with closure are rules of the
    scenario, not settings of the entity: not moved, not run."""
    lc = LibreCube()
    for change in ({"checksum_type": "crc32"}, {"pdu_crc": True}, {"mode": "class1-closure"}):
        params = PURPOSE | change
        moved = lc.profile_changes(params)
        run = params | {k: new for k, (_, new, _) in moved.items()}
        assert set(change) & set(moved) == set()
        assert lc.supports(run, "sender"), change
