"""The archive firewall: every byte that crosses from a container to the host (or a caller's
submission to a grading) is read here as a tar stream with limits, and only a normalised archive
leaves; `materialise` writes that archive to disk without following links."""
