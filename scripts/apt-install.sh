# Sourced by the install scripts. `apt_update TAG` refreshes the package lists;
# `apt_install TAG PACKAGE...` installs packages, refreshing the lists and trying again if the
# first attempt fails. Both run apt-get through sudo when not root; TAG prefixes the messages.
# They exit the calling script with 1 when apt-get is missing or neither root nor sudo is
# available.

apt_get() {
    local tag=$1
    shift
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "$tag: apt-get not found" >&2
        exit 1
    fi
    local sudo=()
    if [[ "$(id -u)" -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            echo "$tag: not root and sudo is not available; run as root: apt-get $*" >&2
            exit 1
        fi
    fi
    echo "$tag: running: ${sudo[*]:+${sudo[*]} }apt-get $*"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=300 "$@"
}

apt_update() {
    apt_get "$1" update -q
}

apt_install() {
    local tag=$1
    shift
    if ! apt_get "$tag" install -y -q --no-install-recommends "$@"; then
        apt_update "$tag"
        apt_get "$tag" install -y -q --no-install-recommends "$@"
    fi
}
