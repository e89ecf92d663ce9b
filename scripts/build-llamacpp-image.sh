#!/usr/bin/env bash
# Build the llama.cpp engine image without an image registry:
#
#   1. debootstrap a minimal Debian forky root filesystem with llama.cpp-tools
#      (llama-server) into .cache/llamacpp-rootfs,
#   2. strip apt caches, docs, man pages and locales,
#   3. docker import it as llmserve/llamacpp:<package version> (and :latest) with
#      llama-server as the entrypoint.
#
# Idempotent: an image whose org.llmserve.recipe label matches is reused, and so
# is a finished rootfs. Run as root (debootstrap and chroot need it); on a fresh
# Debian/Ubuntu machine it installs debootstrap itself.
#
# Usage:
#   scripts/build-llamacpp-image.sh               rootfs + image (needs dockerd)
#   scripts/build-llamacpp-image.sh --rootfs-only rootfs only, for chroot use
#   scripts/build-llamacpp-image.sh --print-image print the image reference and exit
#   scripts/build-llamacpp-image.sh --force       rebuild rootfs and image
#   scripts/build-llamacpp-image.sh --vulkan      the Vulkan variant (with any of the above):
#       llmserve/llamacpp-vulkan:<version> from .cache/llamacpp-vulkan-rootfs, adding
#       libggml0-backend-vulkan and mesa-vulkan-drivers (ANV, RADV, lavapipe). A variant,
#       not the default: measured 2026-12-04 on 2 cores, 474 MB against 122 MB (Mesa
#       brings LLVM); with the .debs cached 44 s against 35 s (load 1.5-2); from an empty
#       cache 235-268 s against 145 s (load 3-21, the download 105 MB against 42). Both images
#       carry org.llmserve.llamacpp.backends ("cpu" / "cpu,vulkan"), which the provider
#       reads to refuse a Vulkan launch on the CPU image.
#
# Stdout carries only the result (the image reference, or the rootfs path with
# --rootfs-only), so callers can write img=$(scripts/build-llamacpp-image.sh);
# progress and timings go to stderr. First build: about a minute on 2 idle
# cores (mostly debootstrap download and unpack), ~125 MB; reuse: under 1 s.
#
# Running llama-server from the rootfs without Docker (what
# scripts/smoke-llamacpp.sh does): a private mount namespace holds the model
# bind mount and /proc, so nothing stays mounted on the host when it exits.
#
#   scripts/build-llamacpp-image.sh --rootfs-only
#   unshare --mount --propagation private sh -c '
#     mount --bind /path/to/models .cache/llamacpp-rootfs/models
#     mount -t proc proc .cache/llamacpp-rootfs/proc
#     exec chroot .cache/llamacpp-rootfs /usr/bin/llama-server \
#       -m /models/tiny-llama.gguf --host 127.0.0.1 --port 8080 --metrics'
#
# The chroot shares the host's network namespace, so 127.0.0.1 is the host's
# loopback. The image equivalent:
#
#   docker run --rm --network host -v /path/to/models:/models:ro \
#     llmserve/llamacpp:latest -m /models/tiny-llama.gguf --host 127.0.0.1 --port 8080
#
# Environment overrides: LLAMACPP_SUITE, LLAMACPP_MIRROR, LLAMACPP_PACKAGES,
# LLAMACPP_ROOTFS, LLAMACPP_DEB_CACHE, LLAMACPP_IMAGE_REPO (see
# scripts/lib-llamacpp.sh).
set -euo pipefail

mode=image
force=0
for arg in "$@"; do
	case "$arg" in
	--rootfs-only) mode=rootfs ;;
	--print-image) mode=print ;;
	--force) force=1 ;;
	--vulkan) export LLAMACPP_VARIANT=vulkan ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		printf 'error: unknown argument %s (see --help)\n' "$arg" >&2
		exit 1
		;;
	esac
done

# Sourced after the arguments: --vulkan picks the variant the settings derive from.
# shellcheck source=scripts/lib-llamacpp.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib-llamacpp.sh"

recipe="$(llamacpp_recipe)"
t_start=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# existing_image prints the newest image built from this recipe, if any. The
# label, not the tag alone, decides reuse: a tag can survive a recipe change.
existing_image() {
	docker image ls --filter "label=org.llmserve.recipe=$recipe" \
		--format '{{.Repository}}:{{.Tag}}' "$LLAMACPP_IMAGE_REPO" 2>/dev/null |
		grep -v ':<none>$' | grep -v ':latest$' | head -n1 || true
}

if [[ "$mode" == print ]]; then
	img="$(existing_image)"
	[[ -n "$img" ]] || die "no $LLAMACPP_IMAGE_REPO image for recipe $recipe; run $0"
	printf '%s\n' "$img"
	exit 0
fi

[[ "$(id -u)" == 0 ]] || die "run as root: debootstrap, chroot and docker import need it"

# Concurrent callers (a smoke test and an acceptance test, two make targets)
# would otherwise debootstrap into the same directory; the second one waits and
# then finds the finished rootfs or image.
mkdir -p "$(dirname "$LLAMACPP_ROOTFS")"
exec 9>"$LLAMACPP_ROOTFS.lock"
flock 9

if [[ "$mode" == image && "$force" == 0 ]]; then
	command -v docker >/dev/null || die "docker CLI not found (apt-get install docker.io)"
	docker info >/dev/null 2>&1 || die "cannot reach dockerd; start it first (dockerd &)"
	img="$(existing_image)"
	if [[ -n "$img" ]]; then
		log "reusing image $img (recipe $recipe); --force rebuilds"
		printf '%s\n' "$img"
		exit 0
	fi
fi

build_rootfs() {
	if ! command -v debootstrap >/dev/null; then
		log "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	fi
	# Older debootstrap releases (bookworm's) ship no script for forky; testing and
	# sid are bootstrapped identically, so the sid script is the right stand-in.
	local script=""
	if [[ ! -e "/usr/share/debootstrap/scripts/$LLAMACPP_SUITE" ]]; then
		script=/usr/share/debootstrap/scripts/sid
	fi

	local tmp="$LLAMACPP_ROOTFS.tmp"
	rm -rf "$tmp"
	mkdir -p "$(dirname "$LLAMACPP_ROOTFS")"
	local t0
	t0=$(date +%s.%N)
	log "debootstrap $LLAMACPP_SUITE (minbase + $LLAMACPP_PACKAGES) into $tmp"
	# --include resolves the packages' dependencies from the suite's index, which
	# saves a second apt-get pass inside the chroot.
	# The downloaded packages stay in a cache outside the rootfs: a --force or
	# recipe rebuild then needs no network for unchanged packages, and the
	# rootfs never carries them.
	mkdir -p "$LLAMACPP_DEB_CACHE"
	if ! debootstrap --variant=minbase --include="$LLAMACPP_PACKAGES" --cache-dir="$LLAMACPP_DEB_CACHE" \
		"$LLAMACPP_SUITE" "$tmp" "$LLAMACPP_MIRROR" $script >"$tmp.log" 2>&1; then
		tail -n 30 "$tmp.log" >&2
		[[ -f "$tmp/debootstrap/debootstrap.log" ]] && tail -n 30 "$tmp/debootstrap/debootstrap.log" >&2
		die "debootstrap failed; full log in $tmp.log"
	fi
	log "debootstrap done in $(elapsed "$t0") s"

	t0=$(date +%s.%N)
	# Nothing here ever runs apt again; the package lists, caches and docs are
	# dead weight in every image pull and container start.
	rm -rf "$tmp"/var/cache/apt/* "$tmp"/var/lib/apt/lists/* \
		"$tmp"/var/cache/debconf/*-old "$tmp"/var/lib/dpkg/*-old \
		"$tmp"/usr/share/doc/* "$tmp"/usr/share/man/* "$tmp"/usr/share/info/* \
		"$tmp"/usr/share/lintian "$tmp"/usr/share/linda \
		"$tmp"/var/log/* "$tmp"/tmp/* "$tmp"/var/tmp/*
	find "$tmp/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} + 2>/dev/null || true
	# The image gets /dev from the container runtime and the chroot recipe binds
	# the host's; nodes left by debootstrap would only be stale copies.
	mkdir -p "$tmp/models"
	[[ -x "$tmp$LLAMACPP_SERVER_BIN" ]] || die "$LLAMACPP_SERVER_BIN missing from the rootfs; has llama.cpp-tools moved it?"
	# Proves the binary links against the rootfs libraries before anything relies on it.
	chroot "$tmp" "$LLAMACPP_SERVER_BIN" --version >"$tmp.version" 2>&1 ||
		{
			cat "$tmp.version" >&2
			die "llama-server does not run inside the rootfs"
		}
	if [[ "$LLAMACPP_VARIANT" == vulkan ]]; then
		[[ -e "$tmp$LLAMACPP_VULKAN_BACKEND" ]] || die "$LLAMACPP_VULKAN_BACKEND missing from the rootfs; has libggml0-backend-vulkan moved it?"
		# lavapipe is a CPU-type Vulkan device, which ggml lists only when
		# GGML_VK_VISIBLE_DEVICES names it: proves backend, loader and driver load.
		GGML_VK_VISIBLE_DEVICES=0 chroot "$tmp" "$LLAMACPP_SERVER_BIN" --list-devices >"$tmp.version" 2>&1 || true
		grep -q 'Vulkan0: ' "$tmp.version" || {
			cat "$tmp.version" >&2
			die "llama-server lists no Vulkan device inside the rootfs (lavapipe expected)"
		}
		log "$(grep 'Vulkan0: ' "$tmp.version" | sed 's/^ *//')"
		# The provider adds the render and video groups by name where it maps /dev/dri
		# (docker --group-add resolves names in the image); minbase has video, not render.
		chroot "$tmp" getent group render >/dev/null || chroot "$tmp" groupadd --system render
	fi
	printf '%s\n' "$recipe" >"$tmp/.llmserve-rootfs"
	rm -rf "$LLAMACPP_ROOTFS" "$tmp.log" "$tmp.version"
	mv "$tmp" "$LLAMACPP_ROOTFS"
	log "rootfs trimmed to $(du -sh "$LLAMACPP_ROOTFS" | cut -f1) in $(elapsed "$t0") s"
}

if [[ "$force" == 1 ]] || ! llamacpp_rootfs_ready; then
	build_rootfs
else
	log "reusing rootfs $LLAMACPP_ROOTFS (recipe $recipe)"
fi

version="$(llamacpp_pkg_version)"
[[ -n "$version" ]] || die "cannot read the llama.cpp-tools version from $LLAMACPP_ROOTFS"
log "llama.cpp-tools $version"

if [[ "$mode" == rootfs ]]; then
	log "total $(elapsed "$t_start") s"
	printf '%s\n' "$LLAMACPP_ROOTFS"
	exit 0
fi

command -v docker >/dev/null || die "docker CLI not found (apt-get install docker.io)"
docker info >/dev/null 2>&1 || die "cannot reach dockerd; start it first (dockerd &)"

tag="$LLAMACPP_IMAGE_REPO:$(llamacpp_tag_from_version "$version")"
t0=$(date +%s.%N)
log "docker import -> $tag"
# dev/ and proc/ contents are excluded: the runtime provides both. The marker
# file is build bookkeeping, not part of the image.
tar -C "$LLAMACPP_ROOTFS" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' \
	--exclude='./sys/*' --exclude=./.llmserve-rootfs -cf - . |
	docker import \
		--change "ENTRYPOINT [\"$LLAMACPP_SERVER_BIN\"]" \
		--change 'CMD ["--help"]' \
		--change 'ENV LC_ALL=C.UTF-8' \
		--change 'EXPOSE 8080' \
		--change 'WORKDIR /' \
		--change "LABEL org.llmserve.recipe=$recipe" \
		--change "LABEL org.llmserve.engine=llamacpp" \
		--change "LABEL org.llmserve.llamacpp.version=$version" \
		--change "LABEL org.llmserve.llamacpp.backends=$LLAMACPP_BACKENDS" \
		--change "LABEL org.llmserve.debian.suite=$LLAMACPP_SUITE" \
		--message "llama.cpp-tools $version ($LLAMACPP_BACKENDS) on Debian $LLAMACPP_SUITE minbase" \
		- "$tag" >/dev/null
docker tag "$tag" "$LLAMACPP_IMAGE_REPO:latest"
size=$(docker image inspect -f '{{.Size}}' "$tag")
log "imported in $(elapsed "$t0") s, $((size / 1000000)) MB"
log "total $(elapsed "$t_start") s"
printf '%s\n' "$tag"
