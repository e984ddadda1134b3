"""What the CFDP implementations under test share: the adapter
(:mod:`.adapter`), the harnesses' standard-library kit (:mod:`.harnesskit`)
and the harness tests' helpers (:mod:`.testing`)."""
