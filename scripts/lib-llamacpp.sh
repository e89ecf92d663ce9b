# shellcheck shell=bash
# Shared settings for the llama.cpp engine scripts (build-llamacpp-image.sh,
# smoke-llamacpp.sh). Sourced, never executed. Every value can be overridden from
# the environment so CI and the quickstart can point at other caches or tags.

LLAMACPP_REPO_ROOT="${LLAMACPP_REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"

# llama-server is only packaged in Debian testing (forky); its libc is newer than
# bookworm's, so it lives in its own forky root filesystem.
LLAMACPP_SUITE="${LLAMACPP_SUITE:-forky}"
LLAMACPP_MIRROR="${LLAMACPP_MIRROR:-http://deb.debian.org/debian}"
# The variant is what the image computes on. "cpu": llama.cpp-tools alone (ggml's CPU
# backends). "vulkan": also ggml's Vulkan backend (libggml0-backend-vulkan, loaded from
# /usr/lib/x86_64-linux-gnu/ggml/backends0/) and Mesa's Vulkan drivers (ANV for Intel
# Arc, RADV for AMD, lavapipe on the CPU), in its own rootfs and image repository
# (llmserve/llamacpp-vulkan): Mesa brings LLVM, which more than doubles the image.
LLAMACPP_VARIANT="${LLAMACPP_VARIANT:-cpu}"
case "$LLAMACPP_VARIANT" in
cpu)
	llamacpp_default_packages="llama.cpp-tools"
	llamacpp_suffix=""
	LLAMACPP_BACKENDS="cpu"
	llamacpp_variant_rev=""
	;;
vulkan)
	llamacpp_default_packages="llama.cpp-tools,libggml0-backend-vulkan,mesa-vulkan-drivers"
	llamacpp_suffix="-vulkan"
	LLAMACPP_BACKENDS="cpu,vulkan"
	# Bumped when only the Vulkan variant's build steps change (1: the render group).
	llamacpp_variant_rev="vulkan-1"
	;;
*)
	printf 'error: LLAMACPP_VARIANT=%s: use cpu or vulkan\n' "$LLAMACPP_VARIANT" >&2
	exit 1
	;;
esac
# Comma-separated, as debootstrap --include takes them.
LLAMACPP_PACKAGES="${LLAMACPP_PACKAGES:-$llamacpp_default_packages}"
LLAMACPP_ROOTFS="${LLAMACPP_ROOTFS:-$LLAMACPP_REPO_ROOT/.cache/llamacpp${llamacpp_suffix}-rootfs}"
# Shared by the variants: the second one downloads only what the first did not. Outside
# the repository, beside the other tools (LLMSERVE_TOOLS_CACHE), keyed by suite: a fresh
# clone on a machine that built once downloads nothing (about 150 MB otherwise).
LLAMACPP_DEB_CACHE="${LLAMACPP_DEB_CACHE:-${LLMSERVE_TOOLS_CACHE:-/var/cache/llmserve-tools}/debootstrap-debs-$LLAMACPP_SUITE}"
LLAMACPP_IMAGE_REPO="${LLAMACPP_IMAGE_REPO:-llmserve/llamacpp${llamacpp_suffix}}"
LLAMACPP_SERVER_BIN="/usr/bin/llama-server"
LLAMACPP_VULKAN_BACKEND="/usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-vulkan.so"

# The recipe identifies what the rootfs and image were built from. A change to any
# input yields a new recipe, so a stale cache is rebuilt instead of silently reused.
# Bump LLAMACPP_RECIPE_REV when the build steps themselves change.
LLAMACPP_RECIPE_REV=2
llamacpp_recipe() {
	printf '%s|%s|%s|%s%s\n' "$LLAMACPP_RECIPE_REV" "$LLAMACPP_SUITE" "$LLAMACPP_MIRROR" "$LLAMACPP_PACKAGES" "${llamacpp_variant_rev:+|$llamacpp_variant_rev}" |
		sha256sum | cut -c1-16
}

# Marker written last by the build, so a half-finished debootstrap (interrupted,
# network error) is never mistaken for a usable rootfs.
llamacpp_rootfs_marker() { printf '%s/.llmserve-rootfs' "$LLAMACPP_ROOTFS"; }

llamacpp_rootfs_ready() {
	local marker
	marker="$(llamacpp_rootfs_marker)"
	[[ -f "$marker" ]] && [[ "$(cat "$marker")" == "$(llamacpp_recipe)" ]] &&
		[[ -x "$LLAMACPP_ROOTFS$LLAMACPP_SERVER_BIN" ]]
}

# The llama.cpp package version inside the rootfs; it becomes the image tag.
llamacpp_pkg_version() {
	chroot "$LLAMACPP_ROOTFS" dpkg-query -W -f='${Version}' llama.cpp-tools 2>/dev/null ||
		sed -n '/^Package: llama.cpp-tools$/,/^$/s/^Version: //p' "$LLAMACPP_ROOTFS/var/lib/dpkg/status"
}

# Docker tags allow [A-Za-z0-9_.-]; Debian versions also use ':' (epoch), '+' and
# '~'. The epoch never changes what is installed, so it is dropped:
# 1:0.7.0+dfsg-2 -> 0.7.0-dfsg-2.
llamacpp_tag_from_version() { printf '%s' "${1#*:}" | tr '+~' '--'; }

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}
