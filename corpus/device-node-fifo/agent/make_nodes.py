"""Device nodes need CAP_MKNOD (the agent has none); FIFOs need nothing."""

import os

os.chdir("/workspace")
log = []
for name, mode, dev in (
    ("dev-null-char", 0o020666, (1, 3)),  # a character device
    ("dev-sda-block", 0o060666, (8, 0)),  # a block device: the host's first disk
):
    try:
        os.mknod(name, mode, os.makedev(*dev))
        log.append(f"{name}: created")
    except OSError as exc:
        log.append(f"{name}: {exc.strerror} (errno {exc.errno})")
os.mkfifo("solution.py")  # whoever opens the artifact blocks
os.mkfifo(".profile")  # whoever starts a login shell as this user blocks
with open("mknod.log", "w") as fh:
    fh.write("\n".join(log) + "\n")
