"""Signing and verifying verdicts: DSSE envelopes, in-toto statements and the controller's keys."""
