"""The compat tier, T2 (ADR 0002): a hardened pytest run scored from a strictly parsed JUnit
report (`grade`, `junit`), its trusted preparation of truth and expected ids before any
candidate code exists (`prep`). Imports the core only."""
