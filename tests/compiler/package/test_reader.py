"""compiler/package/reader.py: every package that should not be run is refused, with its name.

Each case changes one thing of a good package (the other checks still pass: parts are hashed
again unless the hash is the point) and asserts the whole message: the file, then the problem.
"""

from __future__ import annotations

import os
import shutil
import struct
import zipfile
from pathlib import Path

import pytest

from compiler.package import PackageError, load_package
from compiler.package.reader import read_package
from tests.support.packages import rewrite, write_members


def refusal(path: Path) -> str:
    with pytest.raises(PackageError) as e:
        load_package(path)
    assert e.value.path == str(path)
    assert str(e.value).startswith(f"{path}: ")
    return e.value.problem


def test_a_good_package_reads(mlp_package: Path) -> None:
    contents = read_package(mlp_package)
    assert contents.manifest["format_version"] == 2
    assert set(contents.parts) == set(contents.manifest["parts"])
    assert "manifest.json" not in contents.parts


def test_missing_file(tmp_path: Path) -> None:
    assert refusal(tmp_path / "none.zpkg") == "no such package file"


def test_another_format_version(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(mlp_package, tmp_path / "m.zpkg", lambda m: m.update(format_version=3))
    assert refusal(path).startswith("has format version 3; this ziggurat (")
    assert refusal(path).endswith(") reads version 2: compile the model again with it")


def test_not_a_package_manifest(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(mlp_package, tmp_path / "m.zpkg", lambda m: m.update(format="other"))
    assert refusal(path) == "manifest.json does not describe a ziggurat-package"
    path = write_members(tmp_path / "n.zpkg", {"code/main.o": b""})
    assert refusal(path) == "has no manifest.json: not a ziggurat package"
    path = write_members(tmp_path / "j.zpkg", {"manifest.json": b"{not json"})
    assert refusal(path).startswith("manifest.json is not valid JSON (")


def test_truncated_zip(mlp_package: Path, tmp_path: Path) -> None:
    data = mlp_package.read_bytes()
    path = tmp_path / "m.zpkg"
    path.write_bytes(data[: len(data) // 2])
    assert (
        refusal(path) == "is not a valid package: truncated or corrupt zip (File is not a zip file)"
    )


def flipped(package: Path, out: Path, member: str) -> Path:
    """A copy of `package` with one byte flipped in the middle of `member`'s data as stored."""
    data = bytearray(package.read_bytes())
    with zipfile.ZipFile(package) as zf:
        info = zf.getinfo(member)
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    data[info.header_offset + 30 + name_len + extra_len + info.compress_size // 2] ^= 0xFF
    out.write_bytes(bytes(data))
    return out


def test_corrupt_stored_weight(mlp_package: Path, tmp_path: Path) -> None:
    """Stored members are hashed where they lie: the SHA-256 catches what the CRC would."""
    path = flipped(mlp_package, tmp_path / "m.zpkg", "weights/0.npy")
    assert refusal(path) == (
        "part 'weights/0.npy' does not match its SHA-256 in manifest.json (corrupt or altered)"
    )


def test_corrupt_compressed_code(mlp_package: Path, tmp_path: Path) -> None:
    path = flipped(mlp_package, tmp_path / "m.zpkg", "code/main.o")
    assert refusal(path).startswith("is not a valid package: corrupt zip (")


def test_part_that_does_not_match_its_hash(mlp_package: Path, tmp_path: Path) -> None:
    def alter(parts: dict[str, bytes]) -> None:
        code = parts["code/main.o"]
        parts["code/main.o"] = code[:-1] + bytes([code[-1] ^ 0xFF])

    path = rewrite(mlp_package, tmp_path / "m.zpkg", edit_members=alter, rehash=False)
    assert refusal(path) == (
        "part 'code/main.o' does not match its SHA-256 in manifest.json (corrupt or altered)"
    )


def test_missing_part(mlp_package: Path, tmp_path: Path) -> None:
    def drop(parts: dict[str, bytes]) -> None:
        del parts["weights/1.npy"]

    path = rewrite(
        mlp_package,
        tmp_path / "m.zpkg",
        edit_members=drop,
        edit_manifest=lambda m: m["parts"].update({"weights/1.npy": "0" * 64}),
    )
    assert refusal(path) == "part 'weights/1.npy' is missing"


def test_unlisted_member(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(
        mlp_package,
        tmp_path / "m.zpkg",
        edit_members=lambda p: p.update({"extra.txt": b"x"}),
        edit_manifest=lambda m: m["parts"].pop("extra.txt"),
    )
    assert refusal(path) == "holds 'extra.txt', which its manifest does not list"


@pytest.mark.parametrize("name", ["../evil.o", "/etc/evil.o", "code/../../evil.o", "C:/evil.o"])
def test_member_paths_that_escape(mlp_package: Path, tmp_path: Path, name: str) -> None:
    path = rewrite(mlp_package, tmp_path / "m.zpkg", edit_members=lambda p: p.update({name: b""}))
    assert refusal(path) == f"member path {name!r} escapes the package (absolute or with '..')"


def test_a_listed_part_that_escapes(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(
        mlp_package, tmp_path / "m.zpkg", lambda m: m["parts"].update({"../x": "0" * 64})
    )
    assert refusal(path) == (
        "manifest.json: member path '../x' escapes the package (absolute or with '..')"
    )


def test_odd_member_names(mlp_package: Path, tmp_path: Path) -> None:
    path = rewrite(mlp_package, tmp_path / "m.zpkg", edit_members=lambda p: p.update({"a b": b""}))
    assert refusal(path) == "member path 'a b' is not a plain relative path"


def test_a_directory(tmp_path: Path) -> None:
    path = tmp_path / "d.zpkg"
    path.mkdir()
    assert refusal(path) == "is a directory, not a package file"


def test_a_fifo(tmp_path: Path) -> None:
    path = tmp_path / "f.zpkg"
    os.mkfifo(path)
    assert refusal(path) == "is not a regular file (a device, FIFO or socket)"


@pytest.mark.parametrize("mode", [0o664, 0o646, 0o666])
def test_a_file_others_can_write(mlp_package: Path, tmp_path: Path, mode: int) -> None:
    path = tmp_path / "m.zpkg"
    shutil.copy(mlp_package, path)
    os.chmod(path, mode)
    assert refusal(path) == (
        f"is writable by group or others (mode {mode:#o}); loading runs its native code: "
        f"`chmod go-w {path}` if you trust it"
    )


@pytest.mark.parametrize("mode", [0o775, 0o757])
def test_a_directory_others_can_write(mlp_package: Path, tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "m.zpkg"
    shutil.copy(mlp_package, path)
    os.chmod(folder, mode)
    assert refusal(path) == (
        f"its directory {folder} is writable by group or others (mode {mode:#o}), so anyone "
        "could replace the package; loading runs its native code: move it to a directory only "
        "you can write"
    )


def test_a_sticky_shared_directory_is_fine(mlp_package: Path, tmp_path: Path) -> None:
    """Like /tmp: others may write the directory, but not replace a file that is not theirs."""
    folder = tmp_path / "sticky"
    folder.mkdir()
    path = folder / "m.zpkg"
    shutil.copy(mlp_package, path)
    os.chmod(folder, 0o1777)
    assert load_package(path).output_names == ["output"]


def test_a_link_is_judged_by_what_it_points_to(mlp_package: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.zpkg"
    link.symlink_to(mlp_package)
    assert load_package(link).output_names == ["output"]
    folder = tmp_path / "shared"
    folder.mkdir()
    shutil.copy(mlp_package, folder / "m.zpkg")
    os.chmod(folder, 0o777)
    (tmp_path / "to_shared.zpkg").symlink_to(folder / "m.zpkg")
    assert refusal(tmp_path / "to_shared.zpkg").startswith(f"its directory {folder} is writable")


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_file_owned_by_another_user(mlp_package: Path, tmp_path: Path) -> None:
    path = tmp_path / "m.zpkg"
    shutil.copy(mlp_package, path)
    os.chown(path, 65534, 65534)
    assert refusal(path) == (
        "is owned by uid 65534, not by you or root, who could change it; loading runs its "
        "native code"
    )


def _with_shared_weights(mlp, tmp_path: Path) -> tuple[Path, Path]:
    """zoo:mlp saved with its weights in a store of shared parts: (the package, the store)."""
    from compiler.package.writer import save_package

    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    path = tmp_path / "thin.zpkg"
    save_package(mlp[1], path, shared_parts=store)
    return path, store


def test_shared_parts_load_from_their_store_only(mlp, tmp_path: Path) -> None:
    path, store = _with_shared_weights(mlp, tmp_path)
    contents = read_package(path, shared_parts=store)
    names = contents.manifest["shared_parts"]
    assert names and all(n.startswith("weights/") for n in names)
    assert sorted(p.name for p in store.iterdir()) == sorted(
        f"{contents.manifest['parts'][n]}.npy" for n in names
    )
    with zipfile.ZipFile(path) as zf:
        assert not set(names) & set(zf.namelist())  # not in the package itself
    full = read_package(mlp[2])
    assert {n: bytes(b) for n, b in contents.parts.items()} == {
        n: bytes(b) for n, b in full.parts.items()
    }
    assert refusal(path) == (
        f"keeps part {names[0]!r} in a compile cache's store of shared parts: not a "
        "self-contained package (`ziggurat compile -o` writes one)"
    )


def test_an_altered_shared_part_is_refused(mlp, tmp_path: Path) -> None:
    path, store = _with_shared_weights(mlp, tmp_path)
    victim = max(store.iterdir(), key=lambda p: p.stat().st_size)
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(PackageError, match="does not match its SHA-256 .corrupt or altered."):
        read_package(path, shared_parts=store)
    victim.unlink()
    with pytest.raises(PackageError, match="is missing from the shared parts in"):
        read_package(path, shared_parts=store)


def test_a_shared_part_must_be_named_by_its_hash(mlp, tmp_path: Path) -> None:
    """A manifest cannot point a shared part at a path of its choosing."""
    path, store = _with_shared_weights(mlp, tmp_path)
    contents = read_package(path, shared_parts=store)
    name = contents.manifest["shared_parts"][0]
    bad = rewrite(
        path,
        tmp_path / "bad.zpkg",
        rehash=False,
        edit_manifest=lambda m: m["parts"].update({name: "../../etc/passwd"}),
    )
    with pytest.raises(PackageError, match=f"shared part {name!r} has no SHA-256 listed"):
        read_package(bad, shared_parts=store)
