#!/usr/bin/env bash
# make dist: the release's files in .build/dist/ — for linux/amd64, arm64
# and armv7, an archive (ruled_<version>_linux_<arch>.tar.gz: the binary,
# the systemd unit, the config, the first-party plugins, README, LICENSE)
# and a .deb (nFPM, dist/nfpm.yaml: /usr/bin/ruled, the unit, the config
# in /etc/ruled, a ruled system user, /var/lib/ruled).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
NFPM=${NFPM:-github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0}
out=.build/dist
rm -rf "$out"
mkdir -p "$out"

release=github.com/ruled-dev/ruled/internal/release
tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || true)
next=$(sed -n 's/^const Next = "\(.*\)"$/\1/p' internal/release/release.go)
version=${tag:-v$next-dev}
commit=$(git rev-parse HEAD 2>/dev/null || true)
modified=$(git diff --quiet HEAD 2>/dev/null && echo false || echo true)
ldflags="-s -w -X $release.commit=$commit -X $release.modified=$modified"
[ -n "$tag" ] && ldflags="$ldflags -X $release.tag=$tag"
echo "dist: ruled $version"

# The unit as the package installs it: the binary is /usr/bin/ruled.
sed 's|/usr/local/bin/ruled|/usr/bin/ruled|' dist/ruled.service >"$out/ruled.service"

for target in amd64:amd64 arm64:arm64 arm:armhf; do
  goarch=${target%%:*} debarch=${target##*:}
  name=ruled_${version#v}_linux_$goarch
  dir=$out/$name
  mkdir -p "$dir/plugins"
  GOOS=linux GOARCH=$goarch GOARM=7 CGO_ENABLED=0 $GO build -trimpath -ldflags "$ldflags" -o "$dir/ruled" ./cmd/ruled
  # The archive's unit is the hand install's (/usr/local/bin, as the
  # README says); the package's names /usr/bin.
  cp dist/ruled.service dist/ruled.yaml dist/grafana/ruled.json README.md LICENSE "$dir/"
  for p in expr publish log fire http; do cp "plugins/build/$p.wasm" "$dir/plugins/"; done
  tar -C "$out" -czf "$out/$name.tar.gz" "$name"
  # nFPM expands the environment in some fields only: the config is
  # filled in here, whole.
  sed -e "s|\${ARCH}|$debarch|g" -e "s|\${VERSION}|$version|g" -e "s|\${BIN}|$dir/ruled|g" \
    -e "s|\${UNIT}|$out/ruled.service|g" dist/nfpm.yaml >"$out/nfpm-$debarch.yaml"
  $GO run "$NFPM" package --config "$out/nfpm-$debarch.yaml" --packager deb --target "$out/" >/dev/null
  rm "$out/nfpm-$debarch.yaml"
  rm -rf "$dir"
done
rm "$out/ruled.service"
ls -l "$out" | awk 'NR > 1 { printf "dist: %-48s %6.1f MB\n", $9, $5 / 1048576 }'
