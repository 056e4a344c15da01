#!/usr/bin/env bash
# Prints the path of a real PyTorch 2.6.0 source tree (test/ included), fetched once from
# Debian's source package into the cache (never into the repository), for the tests that
# need one (`-m needs_pytorch_src`: the recorded upstream layout is checked against it).
# Best effort: when it cannot be had (no network, no apt), it says why on stderr, prints
# nothing and exits 0, and those tests skip as they would without a tree.
set -uo pipefail

version=2.6.0
cache="${SPYRE_CI_CACHE:-$HOME/.cache/spyre-ci}/pytorch-src"
tree="$cache/pytorch-v$version"
if [ -f "$tree/.complete" ]; then
    echo "$tree"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "fetch-pytorch-src: no apt-get here: tests needing a PyTorch source tree skip" >&2
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A private apt configuration: Debian trixie's deb-src only, lists in the scratch directory,
# so the machine's own sources are neither read nor changed.
mkdir -p "$work/parts" "$work/lists/partial" "$work/archives/partial" "$work/get"
cat >"$work/parts/trixie-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt=(apt-get -qq -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/parts"
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
     -o APT::Sandbox::User=root)
if ! timeout 300 "${apt[@]}" update >"$work/log" 2>&1 ||
   ! (cd "$work/get" && timeout 600 "${apt[@]}" source --download-only pytorch) >>"$work/log" 2>&1; then
    echo "fetch-pytorch-src: Debian's pytorch $version source could not be fetched" \
         "($(tail -n 1 "$work/log")): tests needing a PyTorch source tree skip" >&2
    exit 0
fi
orig=$(ls "$work"/get/pytorch_"$version"*.orig.tar.* 2>/dev/null | head -n 1)
if [ -z "$orig" ] || ! tar -xf "$orig" -C "$work/get" 2>>"$work/log" ||
   [ ! -f "$work/get/pytorch-v$version/test/test_ops.py" ]; then
    echo "fetch-pytorch-src: Debian's pytorch $version source did not unpack to a tree with" \
         "test/: tests needing a PyTorch source tree skip" >&2
    exit 0
fi
touch "$work/get/pytorch-v$version/.complete"
mkdir -p "$cache"
rm -rf "$tree"
mv "$work/get/pytorch-v$version" "$tree"
echo "$tree"
