"""No-follow filesystem work, written once: walking a tree, reading it into a tar, writing a tar
into a tree, copying bytes, for trees that hostile code may own and race.

Its callers are the runc backend's archives (`runtime/oci/hosttar.py`) and image layers
(`runtime/oci/layers.py`), and the firewall's submission stream (`dirstream`) and `materialise`;
what differs between them is a named parameter here, with its reason, never a local copy:

- `dirfd`: every path opened one component at a time from a trusted top's fd, O_NOFOLLOW
  (`descend`, `Parents`); the errors (`TreeError` and its kinds), which callers turn into their
  own (`EngineError`, `FirewallError`, `UsageError`): what a failure means is theirs to say.
- `tarout`: a tree read out as a tar stream (`TarOut`): `live` (a container's tree, hostile
  code writing it: changes are described, never raised) or at rest (a submission directory:
  a change is an error); its bounds in depth, width and bytes.
- `tarin`: tar members written into a tree (`Extractor`) under a `Policy`.
- `policy`: the one mode and owner policy, three named cases (`IMAGE`, `CONTAINER`,
  `NORMALISED`) and why each differs.
- `copy`: bytes between streams and fds, a chunk at a time.

Limits, all directions: `MAX_DEPTH` (256) directory levels held open, one fd each (a deeper
directory is read out as its header alone; a deeper member is refused); names are bytes as
Linux has them (non-UTF-8 ones carried through with surrogateescape, no PATH_MAX, since no full
path is ever built); an entry recreated by a racing process is retried a few times, then left
out (reading) or refused (writing). A directory whose fd is held is used wherever it is now:
moved by another process meanwhile, it is read or written at its new place, which a rename
keeps on the same file system (for a container, its own tree: no rename crosses a mount).
"""
