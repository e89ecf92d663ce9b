#!/usr/bin/env bash
# Renders an SVG chart to PNG with headless Chromium (Debian's `chromium` package), so a
# person can look at what results.SVG draws without a browser session.
#
#   scripts/render-svg.sh [in.svg] [out.png]
#
# Defaults render the reference golden file to build/reference-svg.png. Chromium must not
# reach the network: every background service that would is switched off.
set -euo pipefail

in=${1:-internal/results/testdata/reference.svg.golden}
out=${2:-build/reference-svg.png}

chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$chromium_bin" ]]; then
	echo "render-svg: chromium not found; install it with: apt-get install -y chromium" >&2
	exit 1
fi
if [[ ! -r "$in" ]]; then
	echo "render-svg: cannot read $in" >&2
	exit 1
fi

# Size the window to the SVG's own width and height so nothing is cropped.
read -r width height < <(sed -n 's/^<svg[^>]* width="\([0-9.]*\)" height="\([0-9.]*\)".*/\1 \2/p' "$in" | sed -n 1p | awk '{printf "%d %d\n", $1+0.5, $2+0.5}')
width=${width:-1200}
height=${height:-900}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Chromium picks the renderer by file extension; golden files end in .golden.
cp "$in" "$work/chart.svg"
mkdir -p "$(dirname "$out")"
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

"$chromium_bin" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--hide-scrollbars --user-data-dir="$work/profile" \
	--screenshot="$out_abs" --window-size="${width},${height}" "file://$work/chart.svg" \
	>"$work/chromium.log" 2>&1 || { cat "$work/chromium.log" >&2; exit 1; }
if [[ ! -s "$out_abs" ]]; then
	cat "$work/chromium.log" >&2
	echo "render-svg: chromium wrote no image" >&2
	exit 1
fi
echo "render-svg: wrote $out (${width}x${height})"
