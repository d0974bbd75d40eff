"""The runc backend: containers run by the OCI runtime directly, with no daemon in between.
The lifecycle (runtime.py) drives runc, or gVisor's runsc with runsc's differences as data
(runsc.py), through a client that only speaks the runtime's command line (client.py); the
pure config each container gets (bundle.py), Docker's default seccomp profile (seccomp.py),
images unpacked once (rootfs.py), checked against their id (imagesave.py) and their layers
merged (layers.py), archives moved through host directories (archives.py) without following a
link (hosttar.py), the host state that outlives a killed controller (host.py) and what `gc`
finds from it and removes (gc.py)."""
