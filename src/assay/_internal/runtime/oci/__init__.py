"""The runc backend: containers run by the OCI runtime directly, with no daemon in between
(runtime.py); the pure config each container gets (bundle.py), Docker's default seccomp
profile (seccomp.py), images unpacked once and verified by digest (rootfs.py), archives
moved through host directories without following a link (hosttar.py), and the host state
that outlives a killed controller (host.py)."""
