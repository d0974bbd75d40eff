"""What a tar may make in a tree: one policy per kind of tree, every difference said here once.

Two things decide it: whose bytes the tar carries, and whether hostile code shares the tree
while it is written. There are three such pairs in assay, so three policies:

- `IMAGE`: a task image's layers, verified by digest, into a private temp dir that is ours alone
  until it is renamed into the cache. Modes keep all of `0o7777`; `security.capability` and
  `user.*` xattrs are kept; device nodes and members of unknown type are skipped.
- `CONTAINER`: the controller's tar (files it made, or a container's archive it moves) into a
  container's tree, which hostile code writes meanwhile. Modes keep `0o1777`: setuid and setgid
  dropped, sticky kept; no xattrs; anything but a file, directory, link or FIFO is refused.
- `NORMALISED`: the firewall's normalised archive into a fresh empty directory. Modes are exactly
  0755 (directories, files with an execute bit) or 0644; `firewall.materialise` writes it and
  never replaces an entry.

Why setuid differs: an image's own setuid binaries (`passwd`, `su`) are part of what the image
is, and grading containers run them under `no-new-privileges` anyway; a tar the controller puts
into a container may carry a mode a hostile container chose (the T1 baseline moves an agent's
workspace), and a bit that grants privilege is not the controller's to pass on. The sticky bit
only restricts (`/tmp`-like directories), so it stays.

Owners, in every policy: the member's numeric uid and gid (never a name looked up on the host),
or the caller's override (a container's files go to the agent's uid); set only where the caller
says the process may (root: the runc backend requires it; an image unpacked by a non-root test
keeps the tester's). An owner is set before the mode: chown clears setuid bits and file
capabilities. A parent the tar does not list is made 0755 with the override owner or the
process's own, as Docker's MkdirAll makes it: never the group a setgid directory above it
would hand down.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONTAINER", "IMAGE", "NORMALISED", "Policy"]


@dataclass(frozen=True)
class Policy:
    name: str
    mode_bits: int | None
    """The bits of a member's mode an entry gets; None: the normalised 0755/0644."""
    private: bool
    """The tree is ours alone while it is written. Then a directory's mode, owner and time are
    set after the last member, by name (a read-only directory must not stop a later member
    when the process is not root), a member may replace a directory (an image layer's file
    over a lower layer's directory) and a hard link may name any earlier entry (one layer's
    link to a lower layer's file). Shared with hostile code, a directory gets its mode and
    owner at once through the fd it was made as (a name looked up later may be the
    container's by then), its time at the end only as best effort; a directory in the way of a
    file is refused, never removed (its tree is the container's, and so is its size); a hard
    link may name only a file this archive made (every other entry is the container's)."""
    xattrs: bool
    """Regular files keep `security.capability` and `user.*` extended attributes (the image's
    file capabilities); every other namespace means something to the host (`trusted.*` is
    overlayfs' own, `security.selinux` the host's labels) and is never set."""
    skip_others: bool
    """Device nodes and members of unknown type are skipped (the runtime makes /dev itself, and
    a device file reachable on the host is not an image's to place) rather than refused."""

    def mode(self, member_mode: int, *, directory: bool = False) -> int:
        if self.mode_bits is None:
            return 0o755 if directory or member_mode & 0o111 else 0o644
        return member_mode & self.mode_bits


IMAGE = Policy("image", 0o7777, private=True, xattrs=True, skip_others=True)
CONTAINER = Policy("container", 0o1777, private=False, xattrs=False, skip_others=False)
NORMALISED = Policy("normalised", None, private=True, xattrs=False, skip_others=False)
