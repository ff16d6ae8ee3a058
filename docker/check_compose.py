#!/usr/bin/env python3
"""Checks docker/docker-compose.yml and docker/Dockerfile against the built Basalt binaries.

No Docker engine is needed: the files are parsed and checked, not run.

  check_compose.py --bin-dir BUILD/bin [--docker-dir DIR]   check the files, print each check
  check_compose.py --bin-dir BUILD/bin --self-test          feed the checker broken copies of the
                                                            files and assert that it rejects each

The compose file: YAML syntax (yaml.safe_load), the basics of the version-less Compose schema
(known keys, services with image/build, commands as lists, named volumes declared and each used
by one service, health checks with test/interval/timeout/retries/start_period, restart policies,
depends_on), 3 services running basalt-master and 3 running basalt-tserver, every daemon's
--master_addresses naming exactly the master services and their RPC ports, each
--rpc_advertised_addresses being the service's own name, unique published ports, health checks
probing the daemon's web port, and every --flag on a command line existing in the binary it is
given to (from the binary's `--helpxml`, which lists every gflag with its default).

The Dockerfile: debian:12 build stage running scripts/install-deps.sh and a Release CMake+Ninja
build, debian:12-slim runtime stage whose `apt-get install` names are valid, non-dev Debian
package names (checked with apt-cache when package lists are present) that provide every shared
library the binaries link against (readelf + dpkg -S, when available), COPY'd binaries that are
built targets and exist in the build, a non-root user, the data volume, EXPOSE of the ports the
compose file uses, and the flags of CMD/ENTRYPOINT. Plus a .dockerignore at the repository root.

Exit status 0 when every check passes, 1 otherwise (each failure names the file and the problem).
"""

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

import yaml

sys.dont_write_bytecode = True  # No __pycache__ in the source tree.
import dockerfile_check  # noqa: E402 (after the line above)

MASTER = "basalt-master"
TSERVER = "basalt-tserver"
CLI = "basalt"
TSDBD = "basalt-tsdbd"
OUR_PROGRAMS = (MASTER, TSERVER, CLI, TSDBD)
NUM_MASTERS = 3
NUM_TSERVERS = 3

# Service-level keys of the Compose Specification (anything else is a typo or an unsupported key).
SERVICE_KEYS = frozenset("""
    annotations attach blkio_config build cap_add cap_drop cgroup cgroup_parent command configs
    container_name cpu_count cpu_percent cpu_period cpu_quota cpu_rt_period cpu_rt_runtime
    cpu_shares cpus cpuset credential_spec depends_on deploy develop device_cgroup_rules devices
    dns dns_opt dns_search domainname entrypoint env_file environment expose extends
    external_links extra_hosts group_add healthcheck hostname image init ipc isolation labels
    links logging mac_address mem_limit mem_reservation mem_swappiness memswap_limit network_mode
    networks oom_kill_disable oom_score_adj pid pids_limit platform ports privileged profiles
    pull_policy read_only restart runtime scale secrets security_opt shm_size stdin_open
    stop_grace_period stop_signal storage_opt sysctls tmpfs tty ulimits user userns_mode uts
    volumes volumes_from working_dir""".split())
TOP_LEVEL_KEYS = frozenset(["name", "services", "volumes", "networks", "configs", "secrets",
                            "include"])
HEALTHCHECK_KEYS = frozenset(["test", "interval", "timeout", "retries", "start_period",
                              "start_interval", "disable"])
RESTART_POLICIES = re.compile(r"^(no|always|unless-stopped|on-failure(:\d+)?)$")
DEPENDS_CONDITIONS = frozenset(["service_started", "service_healthy",
                                "service_completed_successfully"])
DURATION = re.compile(r"^(\d+(\.\d+)?(us|ms|s|m|h))+$")


class Report:
    """Collects check results; prints one line per check as it goes. Not thread-safe."""

    def __init__(self, out):
        self.out = out
        self.failures = []
        self.passed = 0

    def ok(self, message):
        self.passed += 1
        self.out.write(f"ok    {message}\n")

    def fail(self, message):
        self.failures.append(message)
        self.out.write(f"FAIL  {message}\n")

    def note(self, message):
        self.out.write(f"note  {message}\n")

    def expect(self, condition, ok_message, fail_message):
        if condition:
            self.ok(ok_message)
        else:
            self.fail(fail_message)
        return condition


# ---- The binaries' flags ------------------------------------------------------------------------

_FLAG_CACHE = {}


def binary_flags(path):
    """Returns {flag name: (type, default)} from `path --helpxml`, or None if it cannot run."""
    if path in _FLAG_CACHE:
        return _FLAG_CACHE[path]
    flags = None
    try:
        # gflags exits 1 after printing help; the XML on stdout is what matters.
        run = subprocess.run([path, "--helpxml"], capture_output=True, text=True, timeout=60)
        root = ElementTree.fromstring(run.stdout[run.stdout.find("<AllFlags>"):])
        flags = {f.findtext("name"): (f.findtext("type"), f.findtext("default") or "")
                 for f in root.iter("flag")} or None
    except (OSError, subprocess.SubprocessError, ElementTree.ParseError, ValueError):
        flags = None
    _FLAG_CACHE[path] = flags
    return flags


def parse_flags(args, known):
    """Parses gflags-style args. Returns ({name: value}, [unknown flag names], [positionals])."""
    values, unknown, positionals = {}, [], []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg in ("-", "--"):
            positionals.append(arg)
            continue
        name, has_value, value = arg.lstrip("-").partition("=")
        if name in known:
            if not has_value and known[name][0] != "bool" and i < len(args):
                value = args[i]
                i += 1
            elif not has_value and known[name][0] == "bool":
                value = "true"
            values[name] = value
        elif name.startswith("no") and known.get(name[2:], ("",))[0] == "bool" and not has_value:
            values[name[2:]] = "false"
        else:
            unknown.append(name)
    return values, unknown, positionals


def check_program_flags(report, where, argv, bin_dir):
    """Checks argv[0] is one of our programs built in bin_dir and that it knows every flag.

    Returns the effective flag values ({name: value}, defaults included) or None."""
    program = os.path.basename(argv[0]) if argv else ""
    if program not in OUR_PROGRAMS:
        report.fail(f"{where}: runs '{program}', not one of {', '.join(OUR_PROGRAMS)}")
        return None
    path = os.path.join(bin_dir, program)
    flags = binary_flags(path)
    if flags is None:
        report.fail(f"{where}: cannot read the flags of {path} (`{program} --helpxml`); "
                    "is it built?")
        return None
    values, unknown, _ = parse_flags(argv[1:], flags)
    for name in unknown:
        report.fail(f"{where}: {program} has no flag --{name} (not in `{program} --helpxml`)")
    if not unknown:
        names = ", ".join(f"--{n}" for n in values) or "no flags"
        report.ok(f"{where}: {program} knows {names}")
    effective = {name: default for name, (_, default) in flags.items()}
    effective.update(values)
    return effective


# ---- docker-compose.yml -------------------------------------------------------------------------

def load_compose(report, path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        report.fail(f"{path}: cannot read: {e}")
        return None
    except yaml.YAMLError as e:
        report.fail(f"{path}: YAML syntax error: {' '.join(str(e).split())}")
        return None
    report.ok(f"{path}: YAML parses (yaml.safe_load)")
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict):
        report.fail(f"{path}: no 'services' mapping at the top level")
        return None
    return doc


def check_top_level(report, path, doc):
    report.expect("version" not in doc, f"{path}: version-less (Compose Specification)",
                  f"{path}: has an obsolete top-level 'version' key")
    bad = [k for k in doc if k not in TOP_LEVEL_KEYS and not str(k).startswith("x-")]
    report.expect(not bad, f"{path}: top-level keys {sorted(map(str, doc))} are known",
                  f"{path}: unknown top-level keys {bad}")


def check_service_basics(report, path, name, svc, compose_dir):
    where = f"{path}: service {name}"
    if not isinstance(svc, dict):
        report.fail(f"{where}: is not a mapping")
        return False
    bad = [k for k in svc if k not in SERVICE_KEYS and not str(k).startswith("x-")]
    report.expect(not bad, f"{where}: keys are known Compose service keys",
                  f"{where}: unknown service keys {bad}")
    report.expect("image" in svc or "build" in svc, f"{where}: has image/build",
                  f"{where}: has neither 'image' nor 'build'")
    if "build" in svc:
        check_build(report, where, svc["build"], compose_dir)
    command = svc.get("command")
    report.expect(isinstance(command, list) and command and
                  all(isinstance(a, str) for a in command),
                  f"{where}: command is a list of strings",
                  f"{where}: 'command' must be a non-empty list of strings, got {command!r}")
    restart = str(svc.get("restart", "no"))
    report.expect(RESTART_POLICIES.match(restart), f"{where}: restart: {restart}",
                  f"{where}: invalid restart policy '{restart}'")
    for key in ("stop_grace_period",):
        if key in svc:
            report.expect(DURATION.match(str(svc[key])), f"{where}: {key} is a duration",
                          f"{where}: {key} '{svc[key]}' is not a duration like 30s")
    if "hostname" in svc:
        report.expect(svc["hostname"] == name, f"{where}: hostname is the service name",
                      f"{where}: hostname '{svc['hostname']}' differs from the service name")
    return isinstance(command, list) and all(isinstance(a, str) for a in command)


def check_build(report, where, build, compose_dir):
    if isinstance(build, str):
        build = {"context": build}
    if not isinstance(build, dict) or "context" not in build:
        report.fail(f"{where}: 'build' needs a context")
        return
    context = os.path.normpath(os.path.join(compose_dir, build["context"]))
    dockerfile = os.path.join(context, build.get("dockerfile", "Dockerfile"))
    report.expect(os.path.isfile(dockerfile), f"{where}: build uses {dockerfile}",
                  f"{where}: build dockerfile {dockerfile} does not exist")


def check_healthcheck(report, where, hc):
    if not isinstance(hc, dict):
        report.fail(f"{where}: has no healthcheck")
        return None
    bad = [k for k in hc if k not in HEALTHCHECK_KEYS]
    report.expect(not bad, f"{where}: healthcheck keys are known",
                  f"{where}: unknown healthcheck keys {bad}")
    for key in ("test", "interval", "timeout", "retries", "start_period"):
        if key not in hc:
            report.fail(f"{where}: healthcheck has no '{key}'")
    for key in ("interval", "timeout", "start_period"):
        if key in hc and not DURATION.match(str(hc[key])):
            report.fail(f"{where}: healthcheck {key} '{hc[key]}' is not a duration like 10s")
    if "retries" in hc and not (isinstance(hc["retries"], int) and hc["retries"] > 0):
        report.fail(f"{where}: healthcheck retries must be a positive integer")
    test = hc.get("test")
    if isinstance(test, str):
        return ["sh", "-c", test]
    if isinstance(test, list) and test and test[0] in ("CMD", "CMD-SHELL") and len(test) > 1:
        return ["sh", "-c", test[1]] if test[0] == "CMD-SHELL" else [str(a) for a in test[1:]]
    report.fail(f"{where}: healthcheck test must be [\"CMD\", ...], [\"CMD-SHELL\", ...] or a "
                f"string, got {test!r}")
    return None


def parse_port(entry):
    """Returns (host_ip, host_port, container_port) of a ports entry, or None if malformed."""
    if isinstance(entry, dict):
        target, published = entry.get("target"), entry.get("published")
        return (str(entry.get("host_ip", "")), str(published or ""), str(target or ""))
    m = re.match(r"^(?:(?:(\[[^\]]*\]|[0-9.]+):)?(\d+):)?(\d+)(?:/(tcp|udp))?$", str(entry))
    if not m:
        return None
    return (m.group(1) or "", m.group(2) or "", m.group(3))


def service_volumes(report, where, svc, declared):
    """Returns {target path: named volume} and fails on undeclared named volumes."""
    mounts = {}
    for entry in svc.get("volumes", []) or []:
        if isinstance(entry, dict):
            source, target = entry.get("source", ""), entry.get("target", "")
        else:
            parts = str(entry).split(":")
            source, target = (parts[0], parts[1]) if len(parts) >= 2 else ("", parts[0])
        if source and not source.startswith(("/", ".", "~")):
            if source not in declared:
                report.fail(f"{where}: uses volume '{source}', which the top-level 'volumes' "
                            "does not declare")
        mounts[target] = source
    return mounts


class Daemon:
    """What the cross-service checks need to know about one daemon service."""

    def __init__(self, name, program, flags, mounts, svc):
        self.name, self.program, self.flags, self.mounts, self.svc = (
            name, program, flags, mounts, svc)

    def port(self, flag):
        value = self.flags.get(flag, "")
        return value.rsplit(":", 1)[-1] if ":" in value else value


def check_compose(report, path, bin_dir):
    """Checks the compose file. Returns the container ports its daemons use, or None."""
    doc = load_compose(report, path)
    if doc is None:
        return None
    check_top_level(report, path, doc)
    compose_dir = os.path.dirname(os.path.abspath(path))
    services = doc["services"]
    declared = doc.get("volumes") or {}
    volume_users = {v: [] for v in declared}
    daemons = []
    for name, svc in services.items():
        if not check_service_basics(report, path, name, svc, compose_dir):
            continue
        where = f"{path}: service {name}"
        mounts = service_volumes(report, where, svc, declared)
        for volume in mounts.values():
            volume_users.setdefault(volume, []).append(name)
        flags = check_program_flags(report, f"{where} command", svc["command"], bin_dir)
        program = os.path.basename(svc["command"][0])
        if flags is not None and program in (MASTER, TSERVER):
            daemons.append(Daemon(name, program, flags, mounts, svc))
    for volume, users in volume_users.items():
        if volume in declared:
            report.expect(len(users) == 1, f"{path}: volume {volume} is used by {users}",
                          f"{path}: volume '{volume}' must be used by exactly one service, "
                          f"is used by {users or 'none'}")
    images = {str(s.get("image")) for s in services.values() if isinstance(s, dict)}
    report.expect(len(images) == 1, f"{path}: every service runs image {images}",
                  f"{path}: services run different images {sorted(images)}")
    return check_daemons(report, path, daemons, bin_dir)


def check_daemons(report, path, daemons, bin_dir):
    masters = [d for d in daemons if d.program == MASTER]
    tservers = [d for d in daemons if d.program == TSERVER]
    report.expect(len(masters) == NUM_MASTERS,
                  f"{path}: {len(masters)} services run {MASTER}: {[d.name for d in masters]}",
                  f"{path}: expected {NUM_MASTERS} services running {MASTER}, found "
                  f"{[d.name for d in masters]}")
    report.expect(len(tservers) == NUM_TSERVERS,
                  f"{path}: {len(tservers)} services run {TSERVER}: {[d.name for d in tservers]}",
                  f"{path}: expected {NUM_TSERVERS} services running {TSERVER}, found "
                  f"{[d.name for d in tservers]}")
    expected_masters = [f"{m.name}:{m.port('rpc_bind_addresses')}" for m in masters]
    container_ports = set()
    published = {}
    for d in daemons:
        where = f"{path}: service {d.name}"
        check_addresses(report, where, d, expected_masters)
        check_data_dir(report, where, d)
        check_daemon_healthcheck(report, where, d, bin_dir)
        container_ports |= {d.port("rpc_bind_addresses"), d.flags.get("webserver_port", "")}
        check_daemon_ports(report, where, d, published)
        if d.program == TSERVER:
            deps = d.svc.get("depends_on") or {}
            check_depends_on(report, where, deps, [m.name for m in masters])
    return container_ports


def check_addresses(report, where, d, expected_masters):
    bind = d.flags.get("rpc_bind_addresses", "")
    port = d.port("rpc_bind_addresses")
    report.expect(re.match(r"^0\.0\.0\.0:\d+$", bind), f"{where}: --rpc_bind_addresses={bind}",
                  f"{where}: --rpc_bind_addresses must be 0.0.0.0:PORT, is '{bind}'")
    advertised = d.flags.get("rpc_advertised_addresses", "")
    report.expect(advertised == f"{d.name}:{port}",
                  f"{where}: --rpc_advertised_addresses={advertised} is its service name",
                  f"{where}: --rpc_advertised_addresses must be '{d.name}:{port}' (service "
                  f"name and bound port), is '{advertised}'")
    listed = [a for a in d.flags.get("master_addresses", "").split(",") if a]
    report.expect(sorted(listed) == sorted(expected_masters) and len(set(listed)) == len(listed),
                  f"{where}: --master_addresses names the {len(listed)} masters",
                  f"{where}: --master_addresses must name exactly {expected_masters}, names "
                  f"{listed}")


def check_data_dir(report, where, d):
    data_dir = d.flags.get("fs_data_dir", "")
    under = [t for t, v in d.mounts.items()
             if v and (data_dir == t or data_dir.startswith(t.rstrip("/") + "/"))]
    report.expect(under, f"{where}: --fs_data_dir={data_dir} is on volume "
                  f"{[d.mounts[t] for t in under]}",
                  f"{where}: --fs_data_dir '{data_dir}' is not inside a mounted named volume "
                  f"(mounts: {d.mounts})")


def check_daemon_healthcheck(report, where, d, bin_dir):
    argv = check_healthcheck(report, where, d.svc.get("healthcheck"))
    if argv is None:
        return
    program = os.path.basename(argv[0])
    if program in OUR_PROGRAMS:
        check_program_flags(report, f"{where} healthcheck", argv, bin_dir)
        return
    text = " ".join(argv)
    web = d.flags.get("webserver_port", "")
    url = re.search(r"http://(localhost|127\.0\.0\.1):(\d+)(/\S*)", text)
    report.expect(url and url.group(2) == web and url.group(3) == "/healthz",
                  f"{where}: healthcheck probes /healthz on its web port {web}",
                  f"{where}: healthcheck must probe http://localhost:{web}/healthz (its "
                  f"--webserver_port), runs '{text}'")
    if program == "curl":
        fails_on_http_error = any(a == "--fail" or re.match(r"^-[a-zA-Z]*f", a) for a in argv)
        report.expect(fails_on_http_error, f"{where}: healthcheck curl fails on HTTP errors",
                      f"{where}: healthcheck curl needs -f/--fail, or a 503 counts as healthy")


def check_daemon_ports(report, where, d, published):
    own = {d.port("rpc_bind_addresses"), d.flags.get("webserver_port", "")}
    ports = d.svc.get("ports") or []
    for entry in ports:
        parsed = parse_port(entry)
        if parsed is None:
            report.fail(f"{where}: malformed ports entry {entry!r}")
            continue
        host_ip, host_port, container_port = parsed
        report.expect(container_port in own, f"{where}: publishes its port {container_port}",
                      f"{where}: publishes container port {container_port}, which it does not "
                      f"serve (its ports: {sorted(own)})")
        if host_port:
            other = published.get(host_port)
            report.expect(other is None, f"{where}: host port {host_port} is unique",
                          f"{where}: host port {host_port} is also published by {other}")
            published[host_port] = d.name
    if d.program == TSERVER or d.name == "master-1":
        web = d.flags.get("webserver_port", "")
        report.expect(any(p and p[2] == web for p in map(parse_port, ports)),
                      f"{where}: web port {web} is published to the host",
                      f"{where}: its web port {web} is not published to the host")


def check_depends_on(report, where, deps, masters):
    if isinstance(deps, list):
        deps = {n: {"condition": "service_started"} for n in deps}
    if not isinstance(deps, dict):
        report.fail(f"{where}: depends_on must be a list or a mapping of service names")
        return
    for name, spec in deps.items():
        condition = spec.get("condition", "service_started") if isinstance(spec, dict) else None
        if condition not in DEPENDS_CONDITIONS:
            report.fail(f"{where}: depends_on {name}: unknown condition '{condition}'")
    missing = [m for m in masters if m not in deps]
    report.expect(not missing, f"{where}: depends_on the masters {masters}",
                  f"{where}: depends_on lacks the masters {missing}")


# ---- Driver and self-test -----------------------------------------------------------------------

def run_checks(docker_dir, bin_dir, out):
    report = Report(out)
    ports = check_compose(report, os.path.join(docker_dir, "docker-compose.yml"), bin_dir)
    exposed = dockerfile_check.check_dockerfile(
        report, os.path.join(docker_dir, "Dockerfile"), bin_dir, OUR_PROGRAMS,
        lambda r, where, argv: check_program_flags(r, where, argv, bin_dir))
    if ports is not None and exposed is not None:
        missing = sorted(p for p in ports if p and p not in exposed)
        report.expect(not missing, f"Dockerfile EXPOSEs the compose file's ports {sorted(ports)}",
                      f"Dockerfile does not EXPOSE ports {missing} that the compose file uses")
    dockerfile_check.check_dockerignore(report, os.path.dirname(os.path.abspath(docker_dir)))
    return report


# (name, file, text to replace, replacement, a string the failure must name)
MUTATIONS = [
    ("misspelled flag", "docker-compose.yml", "--webserver_port=8050", "--webserver_prot=8050",
     "webserver_prot"),
    ("YAML syntax error", "docker-compose.yml", "volumes:\n  master-1-data:",
     "volumes:\n  master-1-data: [", "YAML syntax error"),
    ("a master missing from --master_addresses", "docker-compose.yml",
     ",master-3:7051\n", "\n", "--master_addresses must name"),
    ("advertised address is not the service name", "docker-compose.yml",
     "--rpc_advertised_addresses=tserver-2:7050", "--rpc_advertised_addresses=tserver-9:7050",
     "--rpc_advertised_addresses must be 'tserver-2:7050'"),
    ("duplicate host port", "docker-compose.yml", "127.0.0.1:8062:8050", "127.0.0.1:8061:8050",
     "host port 8061"),
    ("undeclared volume", "docker-compose.yml", "\n  tserver-3-data:\n", "\n",
     "'tserver-3-data'"),
    ("healthcheck without retries", "docker-compose.yml", "  retries: 5\n", "",
     "no 'retries'"),
    ("healthcheck on the wrong port", "docker-compose.yml", "http://localhost:8051/healthz",
     "http://localhost:8050/healthz", "must probe http://localhost:8051/healthz"),
    ("tablet servers not depending on a master", "docker-compose.yml",
     "  master-3:\n    condition: service_started\n", "", "depends_on lacks the masters"),
    ("a tablet server service running basalt-master", "docker-compose.yml",
     "      - basalt-tserver\n", "      - basalt-master\n",
     "expected 3 services running basalt-tserver"),
    ("unknown restart policy", "docker-compose.yml", "restart: unless-stopped",
     "restart: sometimes", "invalid restart policy"),
    ("runtime FROM another base", "Dockerfile", "FROM debian:12-slim", "FROM ubuntu:22.04",
     "must be FROM debian:12-slim"),
    ("-dev package in the runtime stage", "Dockerfile", " libzstd1 ", " libzstd-dev ",
     "libzstd-dev"),
    ("COPY of a binary that is not built", "Dockerfile", "/src/build/bin/basalt-tserver ",
     "/src/build/bin/basalt-tsrv ", "basalt-tsrv"),
    ("misspelled flag in CMD", "Dockerfile", "\"--fs_data_dir=", "\"--fs_datadir=",
     "no flag --fs_datadir"),
    ("runtime library not installed", "Dockerfile", " libprotobuf32 ", " ", "libprotobuf32"),
    ("misspelled runtime package", "Dockerfile", " libsnappy1v5 ", " libsnappy1 ",
     "package 'libsnappy1' is unknown to apt-cache"),
]
# Cases that need tools this machine may lack: {case: (available?, what is missing)}.
MUTATION_NEEDS = {
    "runtime library not installed": (dockerfile_check.can_check_libraries, "readelf/ldd/dpkg"),
    "misspelled runtime package": (dockerfile_check.can_check_package_names,
                                   "apt-cache with package lists"),
}


def self_test(docker_dir, bin_dir):
    """Runs the checker on the real files (must pass) and on each mutation (must fail)."""
    root = os.path.dirname(os.path.abspath(docker_dir))
    problems = []
    with tempfile.TemporaryDirectory(prefix="check_compose_") as tmp:
        os.mkdir(os.path.join(tmp, "docker"))
        originals = {}
        for name in ("docker-compose.yml", "Dockerfile"):
            with open(os.path.join(docker_dir, name), encoding="utf-8") as f:
                originals[name] = f.read()
        shutil.copy(os.path.join(root, ".dockerignore"), tmp)
        cases = [("unmodified files", None, None, None, None)] + MUTATIONS
        for case, file, old, new, expected in cases:
            available, missing = MUTATION_NEEDS.get(case, (lambda: True, ""))
            if not available():
                print(f"self-test: {case}: skipped (no {missing} here)")
                continue
            for name, text in originals.items():
                if name == file:
                    if old not in text:
                        problems.append(f"{case}: '{old!r}' is not in {name}; update MUTATIONS")
                        continue
                    text = text.replace(old, new, 1)
                with open(os.path.join(tmp, "docker", name), "w", encoding="utf-8") as f:
                    f.write(text)
            problems += run_case(case, os.path.join(tmp, "docker"), bin_dir, expected)
    for p in problems:
        print(f"self-test FAIL: {p}")
    print(f"self-test: {len(MUTATIONS) + 1} cases, {len(problems)} problem(s)")
    return 1 if problems else 0


def run_case(case, docker_dir, bin_dir, expected):
    log = io.StringIO()
    report = run_checks(docker_dir, bin_dir, log)
    if expected is None:
        if report.failures:
            return [f"{case}: the checker rejects the real files:\n{log.getvalue()}"]
        print(f"self-test: {case}: pass ({report.passed} checks)")
        return []
    named = [f for f in report.failures if expected in f]
    if not named:
        return [f"{case}: expected a failure naming {expected!r}, got "
                f"{report.failures or 'none'}"]
    print(f"self-test: {case}: rejected as expected: {named[0]}")
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True,
                        help="directory of the built basalt, basalt-master, basalt-tserver")
    parser.add_argument("--docker-dir", default=os.path.dirname(os.path.abspath(__file__)),
                        help="directory of Dockerfile and docker-compose.yml (default: this "
                        "script's)")
    parser.add_argument("--self-test", action="store_true",
                        help="check that broken copies of the files are rejected")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.docker_dir, args.bin_dir)
    report = run_checks(args.docker_dir, args.bin_dir, sys.stdout)
    for f in report.failures:
        print(f"check_compose: FAILED: {f}")
    print(f"check_compose: {report.passed} checks ok, {len(report.failures)} failed")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
