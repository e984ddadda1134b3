"""The channel in one place: the emulator's Python control (:mod:`.control`),
link profiles (:mod:`.profiles`), its benchmark (:mod:`.bench`) and the
Rust workspace (emulator/)."""
