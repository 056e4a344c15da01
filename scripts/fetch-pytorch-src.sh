#!/usr/bin/env bash
# Prints the path of a real PyTorch 2.6.0 source tree (test/ included), fetched once from
# Debian's source package into the cache (never into the repository), for the tests that
# need one (`-m needs_pytorch_src`: the recorded upstream layout is checked against it).
# Best effort: when it cannot be had (no network, no apt), it says why on stderr, prints
# nothing and exits 0, and those tests skip as they would without a tree; a failure is
# remembered for an hour so that an offline machine does not wait on apt at every run.
# `make test` calls it unless SPYRE_CI_PYTORCH_SRC is set (set it empty to skip the fetch).
set -uo pipefail

version=2.6.0
cache="${SPYRE_CI_CACHE:-$HOME/.cache/spyre-ci}/pytorch-src"
tree="$cache/pytorch-v$version"
failed="$cache/.failed"
if [ -f "$tree/.complete" ]; then
    echo "$tree"
    exit 0
fi
skip() {
    echo "fetch-pytorch-src: $1: tests needing a PyTorch source tree skip" >&2
    exit 0
}
command -v apt-get >/dev/null 2>&1 || skip "no apt-get here"
mkdir -p "$cache" 2>/dev/null || skip "cannot write $cache"
if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
    skip "the last fetch failed less than an hour ago ($(cat "$failed"))"
fi
exec 9>"$cache/.lock"
flock 9  # one fetch at a time; a second run waits, then finds the tree
if [ -f "$tree/.complete" ]; then
    echo "$tree"
    exit 0
fi
# Scratch inside the cache, so that the final rename is atomic (one file system).
work=$(mktemp -d "$cache/.fetch.XXXXXX") || skip "cannot write $cache"
trap 'rm -rf "$work"' EXIT
# A private apt configuration: Debian trixie's deb-src only, its lists and caches in the
# scratch directory, so the machine's own sources and caches are neither read nor changed.
mkdir -p "$work/parts" "$work/lists/partial" "$work/cache/archives/partial" "$work/get"
cat >"$work/parts/trixie-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt=(apt-get -qq -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/parts"
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
     -o Acquire::Retries=0 -o Acquire::http::Timeout=30 -o APT::Sandbox::User=root)
fail() {
    echo "$1" >"$failed"
    skip "$1"
}
if ! timeout 300 "${apt[@]}" update >"$work/log" 2>&1 ||
   ! (cd "$work/get" && timeout 600 "${apt[@]}" source --download-only pytorch) >>"$work/log" 2>&1; then
    fail "Debian's pytorch $version source could not be fetched ($(tail -n 1 "$work/log"))"
fi
orig=$(ls "$work"/get/pytorch_"$version"*.orig.tar.* 2>/dev/null | head -n 1)
if [ -z "$orig" ] || ! tar -xf "$orig" -C "$work/get" 2>>"$work/log" ||
   [ ! -f "$work/get/pytorch-v$version/test/test_ops.py" ]; then
    fail "Debian's pytorch source did not unpack to a $version tree with test/"
fi
rm -rf "$tree"
mv "$work/get/pytorch-v$version" "$tree" && touch "$tree/.complete" || skip "cannot write $tree"
rm -f "$failed"
echo "$tree"
