"""Dockerfile and .dockerignore checks for docker/check_compose.py (which documents them)."""

import glob
import json
import os
import re
import shlex
import shutil
import subprocess

DATA_VOLUME = "/var/lib/basalt"
DEBIAN_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
# Always present in debian:12-slim (Essential/required), so the runtime stage need not name them.
SLIM_BASE_PACKAGES = frozenset(["libc6", "libgcc-s1"])
# Sanitizer runtimes appear only in sanitizer builds of the tree, never in the image's Release.
SANITIZER_LIB = re.compile(r"^lib(a|t|ub|l|hwa)san\.so")


class Stage:
    """One FROM ... stage of a Dockerfile: its base image, name and instructions."""

    def __init__(self, image, name):
        self.image, self.name, self.instructions = image, name, []

    def args(self, keyword):
        return [rest for kw, rest in self.instructions if kw == keyword]


def parse_dockerfile(text):
    """Returns the stages of a Dockerfile (line continuations joined, comments dropped)."""
    instructions, buf = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        keyword, _, rest = buf.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        buf = ""
    if buf:
        keyword, _, rest = buf.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    stages = []
    for keyword, rest in instructions:
        if keyword == "FROM":
            words = [w for w in rest.split() if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else ""
            stages.append(Stage(words[0] if words else "", name))
        elif stages:
            stages[-1].instructions.append((keyword, rest))
    return stages


def shell_commands(run):
    """Splits a RUN shell line into simple commands (token lists)."""
    commands = []
    for part in re.split(r"&&|\|\||;|\|", run):
        try:
            tokens = shlex.split(part)
        except ValueError:
            continue
        while tokens and (re.match(r"^\w+=", tokens[0]) or tokens[0] in ("!", "sudo")):
            tokens = tokens[1:]
        if tokens:
            commands.append(tokens)
    return commands


def apt_installed(stage):
    packages = []
    for run in stage.args("RUN"):
        for cmd in shell_commands(run):
            if os.path.basename(cmd[0]) in ("apt-get", "apt") and "install" in cmd:
                after = cmd[cmd.index("install") + 1:]
                packages += [t for t in after if not t.startswith("-")]
    return packages


def exec_form(report, where, text):
    try:
        argv = json.loads(text)
    except ValueError:
        argv = None
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        report.fail(f"{where}: must use the exec form [\"program\", \"--flag=...\"] so the "
                    f"daemon runs as PID 1 and receives SIGTERM, got: {text}")
        return None
    return argv


def check_dockerfile(report, path, bin_dir, programs, check_flags):
    """Checks the Dockerfile. Returns the set of EXPOSEd ports, or None.

    programs: the binaries the image must contain; check_flags(report, where, argv) checks the
    flags of a command line running one of them."""
    try:
        with open(path, encoding="utf-8") as f:
            stages = parse_dockerfile(f.read())
    except OSError as e:
        report.fail(f"{path}: cannot read: {e}")
        return None
    if len(stages) < 2:
        report.fail(f"{path}: needs a build stage and a runtime stage, has {len(stages)} stage(s)")
        return None
    build, runtime = stages[0], stages[-1]
    report.expect(build.image == "debian:12", f"{path}: build stage FROM debian:12",
                  f"{path}: the build stage must be FROM debian:12, is FROM {build.image}")
    report.expect(runtime.image == "debian:12-slim", f"{path}: runtime stage FROM debian:12-slim",
                  f"{path}: the runtime stage must be FROM debian:12-slim, is FROM "
                  f"{runtime.image}")
    targets = check_build_stage(report, path, build)
    binaries = check_copied_binaries(report, path, runtime, build.name, targets, bin_dir,
                                     programs)
    check_runtime_packages(report, path, runtime, binaries)
    check_runtime_setup(report, path, runtime, check_flags)
    exposed = set()
    for rest in runtime.args("EXPOSE"):
        exposed |= {p.split("/")[0] for p in rest.split()}
    return exposed


def check_build_stage(report, path, build):
    runs = " ".join(build.args("RUN"))
    report.expect("scripts/install-deps.sh" in runs,
                  f"{path}: build stage installs dependencies with scripts/install-deps.sh",
                  f"{path}: the build stage must run scripts/install-deps.sh")
    report.expect("-G Ninja" in runs and "-DCMAKE_BUILD_TYPE=Release" in runs,
                  f"{path}: build stage configures CMake with Ninja in Release",
                  f"{path}: the build stage must run cmake -G Ninja -DCMAKE_BUILD_TYPE=Release")
    targets = set()
    for cmd in shell_commands(" ; ".join(build.args("RUN"))):
        if os.path.basename(cmd[0]) == "ninja":
            skip_next = False
            for token in cmd[1:]:
                if skip_next:
                    skip_next = False
                elif token in ("-C", "-j", "-l", "-k", "-f"):
                    skip_next = True
                elif not token.startswith("-"):
                    targets.add(token)
    report.expect(targets, f"{path}: build stage builds {sorted(targets)}",
                  f"{path}: the build stage must build its targets with `ninja -C build ...`")
    return targets


def check_copied_binaries(report, path, runtime, build_name, targets, bin_dir, programs):
    """Checks the binaries copied from the build stage; returns their paths in bin_dir."""
    copied = []
    for rest in runtime.args("COPY"):
        words = shlex.split(rest)
        options = [w for w in words if w.startswith("--")]
        if f"--from={build_name}" not in options and "--from=0" not in options:
            continue
        files = [w for w in words if not w.startswith("--")]
        dest = files[-1] if files else ""
        report.expect(dest.rstrip("/") == "/usr/local/bin", f"{path}: COPY into {dest}",
                      f"{path}: binaries must be copied into /usr/local/bin, not '{dest}'")
        copied += [os.path.basename(f) for f in files[:-1]]
    for name in programs:
        if name not in copied:
            report.fail(f"{path}: the runtime stage does not COPY {name} from the build stage")
    binaries = []
    for name in copied:
        built = os.path.join(bin_dir, name)
        exists = os.path.isfile(built) and os.access(built, os.X_OK)
        if report.expect(name in targets and exists,
                         f"{path}: COPY {name}: a built target ({built})",
                         f"{path}: COPY {name}: not a target the build stage builds "
                         f"({sorted(targets)}) or not built at {built}"):
            binaries.append(built)
    return binaries


def check_runtime_setup(report, path, runtime, check_flags):
    users = runtime.args("USER")
    user = users[-1].split(":")[0] if users else "root"
    report.expect(user not in ("root", "0"), f"{path}: runs as non-root user '{user}'",
                  f"{path}: the runtime stage must switch to a non-root USER")
    runs = " ".join(runtime.args("RUN"))
    report.expect(re.search(rf"useradd\b[^&;]*\b{re.escape(user)}\b", runs),
                  f"{path}: creates user '{user}' with useradd",
                  f"{path}: the runtime stage never creates user '{user}' (useradd)")
    volumes = " ".join(runtime.args("VOLUME"))
    report.expect(DATA_VOLUME in volumes, f"{path}: VOLUME {DATA_VOLUME}",
                  f"{path}: the runtime stage must declare VOLUME {DATA_VOLUME}")
    entrypoint = [exec_form(report, f"{path}: ENTRYPOINT", e) for e in runtime.args("ENTRYPOINT")]
    cmd = [exec_form(report, f"{path}: CMD", c) for c in runtime.args("CMD")]
    argv = (entrypoint[-1] if entrypoint and entrypoint[-1] else []) + \
        (cmd[-1] if cmd and cmd[-1] else [])
    if argv:
        check_flags(report, f"{path}: ENTRYPOINT/CMD", argv)
    else:
        report.fail(f"{path}: the runtime stage has no CMD/ENTRYPOINT")


def check_runtime_packages(report, path, runtime, binaries):
    packages = apt_installed(runtime)
    bad = [p for p in packages if not DEBIAN_PACKAGE.match(p)]
    dev = [p for p in packages if p.endswith("-dev") or p in ("build-essential", "cmake")]
    report.expect(packages and not bad, f"{path}: runtime installs {len(packages)} packages",
                  f"{path}: runtime apt-get install names {bad or 'nothing'} "
                  "that are not Debian package names")
    report.expect(not dev, f"{path}: runtime packages are runtime-only (no -dev)",
                  f"{path}: runtime stage installs build packages {dev}")
    for needed in ("curl", "ca-certificates"):
        report.expect(needed in packages, f"{path}: runtime installs {needed}",
                      f"{path}: runtime stage must install {needed}")
    check_packages_exist(report, path, packages)
    check_libraries_provided(report, path, packages, binaries)


def can_check_package_names():
    """Whether apt-cache and downloaded package lists are here to check package names with."""
    return bool(shutil.which("apt-cache") and glob.glob("/var/lib/apt/lists/*_Packages*"))


def can_check_libraries():
    """Whether readelf, ldd and dpkg are here to map the binaries' libraries to packages."""
    return all(shutil.which(t) for t in ("readelf", "ldd", "dpkg"))


def check_packages_exist(report, path, packages):
    if not can_check_package_names():
        report.note(f"{path}: no apt package lists here; package names not checked with "
                    "apt-cache (run apt-get update to check them)")
        return
    known = known_packages(packages)
    for p in packages:
        report.expect(p in known, f"{path}: package {p} exists (apt-cache show)",
                      f"{path}: package '{p}' is unknown to apt-cache (misspelled, or not in "
                      "Debian 12?)")


_KNOWN_PACKAGES = {}  # package name -> whether apt-cache knows it (one apt-cache run is ~1-2 s)


def known_packages(packages):
    """Returns the subset of packages that apt-cache knows (one apt-cache call for new names)."""
    new = sorted(set(packages) - set(_KNOWN_PACKAGES))
    if new:
        # apt-cache show prints a record per known package and skips unknown ones.
        out = subprocess.run(["apt-cache", "show", "--no-all-versions", *new],
                             capture_output=True, text=True).stdout
        found = set(re.findall(r"^Package: (\S+)$", out, re.M))
        _KNOWN_PACKAGES.update({p: p in found for p in new})
    return {p for p in packages if _KNOWN_PACKAGES[p]}


_LIBRARY_OWNERS = {}  # tuple of binaries -> library_owners() (dpkg -S takes ~0.5 s)


def library_owners(binaries):
    """Returns {soname: owning Debian package or None} for the binaries' NEEDED libraries."""
    key = tuple(binaries)
    if key not in _LIBRARY_OWNERS:
        _LIBRARY_OWNERS[key] = find_library_owners(binaries)
    return _LIBRARY_OWNERS[key]


def unused_libraries(binary):
    """The sonames `binary` names as NEEDED but takes no symbol from (`ldd -u`).

    Debian's gcc links with --as-needed except under -fsanitize, so a sanitizer build's binaries
    name every library on the link line (libssl, libre2, libcares through gRPC's CMake target, most
    of Abseil), used or not; the image's Release binaries name only those they use. The libraries
    an unused one stands for come in as dependencies of the packages of the used ones."""
    # Exit status 1 when there are unused dependencies: not an error.
    out = subprocess.run(["ldd", "-u", binary], capture_output=True, text=True).stdout
    return {os.path.basename(p) for p in re.findall(r"^\s+(/\S+)$", out, re.M)}


def find_library_owners(binaries):
    paths = {}
    for binary in binaries:
        dynamic = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
        resolved = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
        where = dict(re.findall(r"^\s*(\S+) => (/\S+)", resolved, re.M))
        unused = unused_libraries(binary)
        for soname in re.findall(r"\(NEEDED\).*\[([^\]]+)\]", dynamic):
            if not SANITIZER_LIB.match(soname) and soname not in unused:
                paths[soname] = where.get(soname)
    candidates = set()
    for p in filter(None, paths.values()):
        real = os.path.realpath(p)
        candidates |= {p, real, re.sub(r"^/usr/", "/", real), re.sub(r"^/(lib)", r"/usr/\1", p)}
    out = subprocess.run(["dpkg", "-S", *sorted(candidates)], capture_output=True,
                         text=True).stdout if candidates else ""
    owner = {}
    for line in out.splitlines():
        pkgs, _, file = line.rpartition(": ")
        owner[file] = pkgs.split(",")[0].split(":")[0].strip()
    result = {}
    for soname, p in paths.items():
        found = [owner[c] for c in (p, os.path.realpath(p) if p else None) if c in owner]
        found += [pkg for f, pkg in owner.items() if p and os.path.basename(f) == soname]
        result[soname] = found[0] if found else None
    return result


def check_libraries_provided(report, path, packages, binaries):
    if not can_check_libraries():
        report.note(f"{path}: readelf/ldd/dpkg not found; the runtime libraries were not "
                    "matched against the binaries")
        return
    for soname, package in sorted(library_owners(binaries).items()):
        if soname.startswith("ld-linux"):
            continue
        if package is None:
            report.fail(f"{path}: {soname} (needed by the binaries) belongs to no Debian package")
        else:
            report.expect(package in packages or package in SLIM_BASE_PACKAGES,
                          f"{path}: {soname} comes from {package}",
                          f"{path}: the binaries need {soname} from package {package}, which "
                          "the runtime stage does not install")


def check_dockerignore(report, root):
    path = os.path.join(root, ".dockerignore")
    try:
        with open(path, encoding="utf-8") as f:
            entries = {line.strip().strip("/") for line in f
                       if line.strip() and not line.startswith("#")}
    except OSError:
        report.fail(f"{path}: missing (the build context would include build/ and .git)")
        return
    for needed in ("build", ".git"):
        report.expect(any(e == needed or e.startswith(needed + "*") for e in entries),
                      f"{path}: excludes {needed}", f"{path}: does not exclude {needed}")
