#!/usr/bin/python3
"""image_libs_check.py DOCKERFILE BINARY... -- the image's runtime stage
installs every shared library the binaries load.

For each binary, ldd lists the libraries it loads (its own and theirs);
dpkg -S names the Debian package that ships each (the driver's libcuda and
libnvidia-* are left out: the NVIDIA container runtime mounts them). The
runtime stage of the Dockerfile (its last FROM) starts from debian:12-slim
and apt-get installs a list of packages: what it has is that list, what
they depend on (Depends and Pre-Depends, through this machine's dpkg
database, where the build's -dev packages have installed them all), and the
base image's own packages (those of priority required, and apt's
dependencies). A library whose package is none of those is reported with
the binaries that need it, and the exit status is 1.
"""
import os
import re
import subprocess
import sys

SKIP = re.compile(r"^(linux-vdso|ld-linux|libcuda\.so|libnvidia)")


def runtime_packages(dockerfile):
    """The packages the last stage's apt-get install lines name."""
    text = open(dockerfile).read().replace("\\\n", " ")
    stages = re.split(r"^FROM\s", text, flags=re.M)
    last = stages[-1]
    packages = []
    for match in re.finditer(r"apt-get install ([^&\n]*)", last):
        packages += [w for w in match.group(1).split() if not w.startswith("-")]
    return packages


def installed():
    """Installed packages: name -> (priority, Depends + Pre-Depends alternatives)."""
    out = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package}\t${Priority}\t${Status}\t${Pre-Depends}, ${Depends}\n"],
        capture_output=True, text=True, check=True).stdout
    packages = {}
    for line in out.splitlines():
        name, priority, status, depends = line.split("\t", 3)
        if not status.endswith(" installed"):
            continue
        alternatives = []
        for clause in depends.split(","):
            names = [re.sub(r"[\s(:].*", "", alt.strip()) for alt in clause.split("|")]
            names = [n for n in names if n]
            if names:
                alternatives.append(names)
        packages[name] = (priority, alternatives)
    return packages


def closure(roots, packages):
    seen, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in packages:
            continue
        seen.add(name)
        for names in packages[name][1]:
            present = [n for n in names if n in packages]
            stack.extend(present[:1])  # the first alternative installed here
    return seen


def packages_of(paths):
    """path -> the Debian package that ships it (absent when none does), with
    one dpkg -S over every spelling of every path (the path ldd printed, the
    file it links to, each with and without usrmerge's /usr)."""
    spellings = {}
    for path in paths:
        names = {path, os.path.realpath(path)}
        for name in list(names):
            if name.startswith("/lib/") or name.startswith("/lib64/"):
                names.add("/usr" + name)
            elif name.startswith("/usr/lib/"):
                names.add(name[len("/usr"):])
        spellings[path] = names
    every = sorted(set().union(*spellings.values())) if spellings else []
    # Exit status 1 when some spelling belongs to no package: expected.
    out = subprocess.run(["dpkg", "-S"] + every, capture_output=True, text=True).stdout
    owner = {}
    for line in out.splitlines():
        package, _, name = line.partition(": ")
        owner[name.strip()] = package.split(":", 1)[0].split(",")[0].strip()
    found = {}
    for path, names in spellings.items():
        for name in sorted(names):
            if name in owner:
                found[path] = owner[name]
                break
    return found


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    dockerfile, binaries = sys.argv[1], sys.argv[2:]
    wanted = runtime_packages(dockerfile)
    if not wanted:
        print(f"{dockerfile}: no apt-get install in its last stage")
        return 1
    packages = installed()
    # A package not installed here (tini) adds what it ships, not libraries
    # the binaries were linked against (those are all installed here).
    missing_here = [w for w in wanted if w not in packages]
    if missing_here:
        print(f"not installed here, so taken as shipping none of the libraries: {' '.join(missing_here)}")
    base = [n for n, (priority, _) in packages.items() if priority == "required"] + ["apt"]
    have = closure(wanted + base, packages)
    loads = {}  # (library, path) -> [binaries]
    problems = []
    for binary in binaries:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True)
        if out.returncode != 0:
            problems.append(f"ldd {binary}: {out.stderr.strip() or out.stdout.strip()}")
            continue
        for line in out.stdout.splitlines():
            m = re.match(r"\s*(\S+) => (\S+)", line)
            if not m or SKIP.match(m.group(1)):
                continue
            if m.group(2) == "not":
                problems.append(f"{binary}: {m.group(1)} not found on this machine")
                continue
            loads.setdefault((m.group(1), m.group(2)), []).append(os.path.basename(binary))
    owners = packages_of({path for _, path in loads})
    needed = {}  # package -> {library: [binaries]}
    for (library, path), users in loads.items():
        if path not in owners:
            problems.append(f"{', '.join(users)}: {path} belongs to no Debian package")
            continue
        needed.setdefault(owners[path], {})[library] = users
    for package in sorted(needed):
        if package in have:
            continue
        for library, users in sorted(needed[package].items()):
            problems.append(f"{dockerfile}: the runtime stage has no {library} (Debian package {package}), "
                            f"which {', '.join(sorted(users))} load")
    for p in problems:
        print(p)
    print(f"{len(needed)} packages' libraries loaded by {len(binaries)} binaries; "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
