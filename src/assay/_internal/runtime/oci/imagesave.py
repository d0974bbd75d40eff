"""A `docker save` stream read and verified: nothing of an image is trusted before this.

The config blob must hash to the image id, the manifest must list as many layers as the
config's `rootfs.diff_ids`, and each layer, uncompressed, must hash to its diff_id, in order;
every layer is checked before any is parsed as a tar. Both `docker save` layouts are read: the
legacy one (`manifest.json`, `<id>.json`, `<v1 id>/layer.tar`; Docker 20.10 here) and the OCI
one (`blobs/sha256/...`, with or without a `manifest.json` beside `index.json`).
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import json
import lzma
import re
import tarfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from assay.errors import EngineError

__all__ = ["HEX", "hex_of", "layer_tar", "verified_layers"]

HEX = re.compile(r"[0-9a-f]{64}")
_MAX_JSON_BYTES = 16 * 1024**2
_CHUNK = 1 << 20
_DECOMPRESSORS: dict[bytes, tuple[str, Callable[[IO[bytes]], io.BufferedIOBase] | None]] = {
    b"\x1f\x8b": ("gzip", lambda f: gzip.GzipFile(fileobj=f, mode="rb")),
    b"BZh": ("bzip2", lambda f: bz2.BZ2File(f, mode="rb")),
    b"\xfd7zXZ\x00": ("xz", lambda f: lzma.LZMAFile(f, mode="rb")),
    # No zstd in this Python's standard library; Docker's own save never writes it.
    b"\x28\xb5\x2f\xfd": ("zstd", None),
}


def verified_layers(
    outer: tarfile.TarFile, image_id: str, spill: Path, max_bytes: int
) -> tuple[list[str], list[str | Path]]:
    """The image's diff_ids and where to read each verified layer from: a member name of `outer`,
    or for a compressed one the file under `spill` it was decompressed into (at most
    `max_bytes`)."""
    config_name, layer_names = _locate(outer, image_id)
    diff_ids = _diff_ids(_read(outer, config_name, _MAX_JSON_BYTES), image_id)
    if len(layer_names) != len(diff_ids):
        raise EngineError(
            f"image {image_id[:19]}: the manifest lists {len(layer_names)} layer(s), "
            f"the config {len(diff_ids)} diff_id(s)"
        )
    # Every layer is checked before any is parsed as a tar.
    sources = [
        _verify_layer(outer, name, diff_id, spill / f"layer-{i}.tar", i, len(diff_ids), max_bytes)
        for i, (name, diff_id) in enumerate(zip(layer_names, diff_ids, strict=True))
    ]
    return diff_ids, sources


@contextlib.contextmanager
def layer_tar(outer: tarfile.TarFile, source: str | Path) -> Iterator[tarfile.TarFile]:
    """A verified layer (from `verified_layers`) opened as a tar; a spilled one is removed
    after."""
    fileobj = outer.extractfile(source) if isinstance(source, str) else None
    path = source if isinstance(source, Path) else None
    with tarfile.open(name=path, fileobj=fileobj, mode="r:") as layer:
        yield layer
    if path is not None:
        path.unlink()


def _verify_layer(
    outer: tarfile.TarFile, name: str, diff_id: str, spill: Path, i: int, n: int, max_bytes: int
) -> str | Path:
    """Hash one layer as its diff_id is defined (uncompressed); the member name to read it
    from again, or for a compressed one the file it was decompressed into."""
    raw = _open(outer, name)
    head = raw.read(8)
    raw.seek(0)
    kind, opener = next(
        ((k, o) for magic, (k, o) in _DECOMPRESSORS.items() if head.startswith(magic)),
        ("", None),
    )
    digest = hashlib.sha256()
    if not kind:
        while chunk := raw.read(_CHUNK):
            digest.update(chunk)
        source: str | Path = name
    elif opener is None:
        raise EngineError(f"layer {i + 1} of {n} is {kind}-compressed, which is not supported")
    else:
        budget = max_bytes
        with opener(raw) as plain, open(spill, "xb") as out:
            while chunk := plain.read(_CHUNK):
                budget -= len(chunk)
                if budget < 0:
                    raise EngineError(f"layer {i + 1} of {n} decompresses past its cap")
                digest.update(chunk)
                out.write(chunk)
        source = spill
    got = "sha256:" + digest.hexdigest()
    if got != diff_id:
        raise EngineError(
            f"layer {i + 1} of {n} ({name}) hashes to {got}, not its diff_id {diff_id}"
        )
    return source


def hex_of(image_id: str) -> str:
    hexid = image_id.removeprefix("sha256:")
    if not HEX.fullmatch(hexid):
        raise EngineError(f"not an image id: {image_id!r}")
    return hexid


def _open(outer: tarfile.TarFile, name: str) -> IO[bytes]:
    try:
        member = outer.getmember(name)
    except KeyError:
        raise EngineError(f"the saved image has no {name!r}") from None
    data = outer.extractfile(member)  # follows the legacy layout's symlinked duplicate layers
    if data is None:
        raise EngineError(f"the saved image's {name!r} is not a file")
    return data


def _read(outer: tarfile.TarFile, name: str, cap: int) -> bytes:
    data = _open(outer, name).read(cap + 1)
    if len(data) > cap:
        raise EngineError(f"the saved image's {name!r} is larger than {cap} bytes")
    return data


def _blob_name(digest: object) -> str:
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        raise EngineError(f"the saved image names a blob by {digest!r}, not a sha256 digest")
    return f"blobs/sha256/{hex_of(digest)}"


def _locate(outer: tarfile.TarFile, image_id: str) -> tuple[str, list[str]]:
    """The config's member name and the layers' member names, in order, of the image whose
    config hashes to `image_id`."""
    names = set(outer.getnames())
    want = hex_of(image_id)
    if "manifest.json" in names:
        manifest = json.loads(_read(outer, "manifest.json", _MAX_JSON_BYTES))
        entries = [e for e in manifest if isinstance(e, dict)] if isinstance(manifest, list) else []
        seen: list[str] = []
        for entry in entries:
            config, layers = entry.get("Config"), entry.get("Layers")
            if not isinstance(config, str) or not isinstance(layers, list):
                continue
            digest = hashlib.sha256(_read(outer, config, _MAX_JSON_BYTES)).hexdigest()
            if digest == want:
                if not all(isinstance(layer, str) for layer in layers):
                    raise EngineError("the saved image's manifest.json lists a layer by no name")
                return config, list(layers)
            seen.append(f"sha256:{digest}")
        raise EngineError(
            f"the saved image's config hashes to {', '.join(seen) or 'nothing'}, "
            f"not the image id {image_id}"
        )
    if "index.json" in names:
        index = json.loads(_read(outer, "index.json", _MAX_JSON_BYTES))
        for manifest in _oci_manifests(outer, index, depth=0):
            config = manifest.get("config")
            if isinstance(config, dict) and config.get("digest") == image_id:
                config_name = _blob_name(config["digest"])
                layers = manifest.get("layers")
                if not isinstance(layers, list):
                    raise EngineError("the saved image's OCI manifest has no layer list")
                return config_name, [
                    _blob_name(layer.get("digest") if isinstance(layer, dict) else None)
                    for layer in layers
                ]
        raise EngineError(f"the saved image's index.json has no manifest of {image_id}")
    raise EngineError("the saved image has neither manifest.json nor index.json")


def _oci_manifests(outer: tarfile.TarFile, index: object, depth: int) -> Iterable[dict[str, Any]]:
    """The image manifests an OCI index leads to, through nested indexes (a multi-platform
    image), each blob checked against the digest it was reached by."""
    descriptors = index.get("manifests") if isinstance(index, dict) else None
    for descriptor in descriptors if isinstance(descriptors, list) else []:
        if not isinstance(descriptor, dict):
            continue
        name = _blob_name(descriptor.get("digest"))
        if name not in outer.getnames():
            continue  # a platform this save left out
        blob = _read(outer, name, _MAX_JSON_BYTES)
        if "sha256:" + hashlib.sha256(blob).hexdigest() != descriptor["digest"]:
            raise EngineError(f"the saved image's {name} does not hash to its name")
        doc = json.loads(blob)
        if not isinstance(doc, dict):
            continue
        if "manifests" in doc:
            if depth < 2:
                yield from _oci_manifests(outer, doc, depth + 1)
        elif "config" in doc:
            yield doc


def _diff_ids(config_blob: bytes, image_id: str) -> list[str]:
    got = "sha256:" + hashlib.sha256(config_blob).hexdigest()
    if got != image_id:
        raise EngineError(f"the saved image's config hashes to {got}, not the image id {image_id}")
    config = json.loads(config_blob)
    rootfs = config.get("rootfs") if isinstance(config, dict) else None
    diff_ids = rootfs.get("diff_ids") if isinstance(rootfs, dict) else None
    if not isinstance(diff_ids, list) or not all(
        isinstance(d, str) and d.startswith("sha256:") and HEX.fullmatch(d[7:]) for d in diff_ids
    ):
        raise EngineError(f"image {image_id[:19]}: its config has no usable rootfs.diff_ids")
    return list(diff_ids)
