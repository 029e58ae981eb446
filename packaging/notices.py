#!/usr/bin/env python3
"""Licence notices of the crates linked into the rtscope binary.

    python3 packaging/notices.py [--target TRIPLE] > notices

Lists every crate compiled into `rtscope` for TRIPLE (the normal dependency
graph of the rtscope package: not build scripts, proc-macros or dev-only
crates, which are not in the binary), with its declared licence, and prints
the licence and notice files each crate ships (LICENSE*, COPYING*, NOTICE*,
UNLICENSE*), read from the crate sources cargo has downloaded. The set comes
from `cargo tree -e normal,no-proc-macro`, the files from `cargo metadata`;
both run offline with --locked. A crate that ships no licence file is named,
with its declared licence, under "Crates without a licence file".
Exit status 1 when cargo fails; the notices go to stdout.
"""

import argparse
import json
import os
import re
import subprocess
import sys

LICENCE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|UNLICENSE|COPYRIGHT)", re.I)


def cargo(*args):
    try:
        return subprocess.run(
            ["cargo", *args], check=True, capture_output=True, text=True
        ).stdout
    except subprocess.CalledProcessError as e:
        sys.exit(f"notices.py: cargo {' '.join(args)} failed:\n{e.stderr}")


def linked_crates(target):
    """(name, version) of every non-workspace crate linked into rtscope."""
    out = cargo(
        "tree", "--locked", "-p", "rtscope", "-e", "normal,no-proc-macro",
        "--target", target, "--prefix", "none", "-f", "{p}",
    )
    crates = set()
    for line in out.splitlines():
        m = re.match(r"^(\S+) v(\S+)( \((.*)\))?", line)
        if not m:
            continue
        where = m.group(4) or ""
        if where and where != "*" and not where.startswith("proc-macro"):
            continue  # a path dependency: this workspace (packaging/copyright)
        crates.add((m.group(1), m.group(2)))
    return crates


def licence_files(manifest_path):
    d = os.path.dirname(manifest_path)
    names = sorted(n for n in os.listdir(d) if LICENCE_FILE.match(n))
    files = []
    for n in names:
        p = os.path.join(d, n)
        if os.path.isdir(p):  # e.g. LICENSES/ (REUSE layout)
            files += [os.path.join(p, f) for f in sorted(os.listdir(p))]
        else:
            files.append(p)
    return [f for f in files if os.path.isfile(f)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    rustc = subprocess.run(["rustc", "-vV"], capture_output=True, text=True)
    host = re.search(r"^host: (\S+)", rustc.stdout, re.M).group(1)
    ap.add_argument("--target", default=host)
    args = ap.parse_args()

    wanted = linked_crates(args.target)
    meta = json.loads(cargo("metadata", "--locked", "--format-version", "1",
                            "--filter-platform", args.target))
    by_key = {(p["name"], p["version"]): p for p in meta["packages"]}
    missing_meta = sorted(k for k in wanted if k not in by_key)
    if missing_meta:
        sys.exit(f"notices.py: not in cargo metadata: {missing_meta}")

    out = sys.stdout
    out.write(
        "Third-party notices for /usr/bin/rtscope\n"
        "=========================================\n\n"
        f"The rtscope binary ({args.target}) links the following {len(wanted)} "
        "crates from crates.io.\nEach is listed with its declared licence "
        "(SPDX), followed by the licence\nand notice files it ships.\n\n"
    )
    rows = sorted(wanted)
    for name, version in rows:
        lic = by_key[(name, version)].get("license") or "(see its licence file)"
        out.write(f"  {name} {version}: {lic}\n")
    without = []
    for name, version in rows:
        p = by_key[(name, version)]
        files = licence_files(p["manifest_path"])
        if not files:
            without.append((name, version, p.get("license") or "?"))
            continue
        for f in files:
            out.write("\n" + "-" * 72 + "\n")
            out.write(f"{name} {version}: {os.path.basename(f)}\n\n")
            with open(f, encoding="utf-8", errors="replace") as fh:
                out.write(fh.read().rstrip() + "\n")
    if without:
        out.write("\n" + "-" * 72 + "\nCrates without a licence file\n\n")
        out.write(
            "These crates ship no licence file in their published source; their "
            "declared\nlicence applies (the standard texts: "
            "/usr/share/common-licenses, https://spdx.org/licenses/).\n\n"
        )
        for name, version, lic in without:
            out.write(f"  {name} {version}: {lic}\n")


if __name__ == "__main__":
    main()
