# shellcheck shell=bash
# lib-deps.sh - shared dependency installation for stepsim's scripts (sourced, not executed).
#
# Defines stepsim_install_deps: it asks dpkg which of STEPSIM_DEB_PACKAGES are missing and, only
# if some are, runs `apt-get update` once and then `apt-get install -y` on the missing ones, as root
# or through sudo. Nothing is touched when everything is already installed, so repeated runs are
# fast and need no network. Everything it reports goes to stderr.
#
# Environment:
#   STEPSIM_SKIP_DEPS=1   skip the check entirely (a non-Debian machine with the libraries at hand).

# Debian packages the build, the tests and the tools need (libigraph-dev for topo/,
# gnuplot-nox for plots, Open MPI for distributed sweeps, python3 for tools/data/convert-nemo.py and
# its test, clang and libclang-rt-dev (libFuzzer and the sanitizer runtimes) for tools/fuzz.sh;
# protobuf-c-compiler and libprotobuf-c-dev for the Chakra trace codec (traces/chakra), protobuf-compiler
# and python3-protobuf for its Python check, tests/chakra/check_et.py).
STEPSIM_DEB_PACKAGES=(
    build-essential
    cmake
    pkg-config
    libcjson-dev
    libcmocka-dev
    libigraph-dev
    clang-format
    clang
    libclang-rt-dev
    gnuplot-nox
    libopenmpi-dev
    openmpi-bin
    python3
    protobuf-c-compiler
    libprotobuf-c-dev
    protobuf-compiler
    python3-protobuf
)

stepsim_log() {
    printf '[stepsim] %s\n' "$*" >&2
}

# stepsim_pkg_installed PKG: true if dpkg records PKG as fully installed. A removed package whose
# configuration files remain reports "deinstall ok config-files" and counts as missing.
stepsim_pkg_installed() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [[ $status == *" ok installed" ]]
}

# stepsim_install_deps [PKG...]: install whichever packages are missing (default: all of
# STEPSIM_DEB_PACKAGES). Returns non-zero, with a message, if installation is impossible or fails.
stepsim_install_deps() {
    local -a wanted=("$@")
    local -a missing=()
    local -a sudo=()
    local pkg

    if [[ ${STEPSIM_SKIP_DEPS:-0} == 1 ]]; then
        stepsim_log "STEPSIM_SKIP_DEPS=1: not checking Debian packages"
        return 0
    fi
    if ((${#wanted[@]} == 0)); then
        wanted=("${STEPSIM_DEB_PACKAGES[@]}")
    fi
    if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
        stepsim_log "error: dpkg-query/apt-get not found; this script installs dependencies on Debian."
        stepsim_log "Install these packages (or their equivalents) by hand, then rerun with STEPSIM_SKIP_DEPS=1:"
        stepsim_log "  ${wanted[*]}"
        return 1
    fi

    for pkg in "${wanted[@]}"; do
        stepsim_pkg_installed "$pkg" || missing+=("$pkg")
    done
    if ((${#missing[@]} == 0)); then
        stepsim_log "dependencies: all ${#wanted[@]} Debian packages already installed"
        return 0
    fi
    stepsim_log "dependencies: missing ${missing[*]}"

    if ((EUID != 0)); then
        if ! command -v sudo >/dev/null 2>&1; then
            stepsim_log "error: not running as root and sudo is not available; cannot install: ${missing[*]}"
            stepsim_log "Run as root, or have an administrator run: apt-get install -y ${missing[*]}"
            return 1
        fi
        sudo=(sudo)
        stepsim_log "dependencies: not root, using sudo"
    fi

    # Wait for another apt/dpkg run to release its lock rather than failing at once.
    local -a apt_opts=(-o DPkg::Lock::Timeout=300)
    stepsim_log "dependencies: apt-get update"
    if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update >&2; then
        stepsim_log "error: apt-get update failed"
        return 1
    fi
    stepsim_log "dependencies: apt-get install -y ${missing[*]}"
    if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get "${apt_opts[@]}" install -y "${missing[@]}" >&2; then
        stepsim_log "error: apt-get install failed for: ${missing[*]}"
        return 1
    fi
    for pkg in "${missing[@]}"; do
        if ! stepsim_pkg_installed "$pkg"; then
            stepsim_log "error: $pkg is still not installed after apt-get install"
            return 1
        fi
    done
    stepsim_log "dependencies: installed ${missing[*]}"
}
