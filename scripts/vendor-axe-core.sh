#!/usr/bin/env bash
# Refresh the vendored axe-core the accessibility checks inject into the browser tests
# (tests/support/vendor/axe-core/). Run by hand when moving to a new version; `make test`
# never downloads anything, it uses the committed copy.
#
#   bash scripts/vendor-axe-core.sh 4.14.1
#
# Needs npm (Debian package npm). Fetches the package tarball with `npm pack`, checks it
# against the registry's integrity, copies axe.min.js with its licences and writes PIN.json
# with the file's SRI hash, which tests/support/test_axe_vendor.py checks.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${1:?usage: $0 VERSION (e.g. 4.14.1)}"
target="tests/support/vendor/axe-core"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

integrity="$(npm view "axe-core@${version}" dist.integrity)"
(cd "${work}" && npm pack --silent "axe-core@${version}" >/dev/null)
tarball="${work}/axe-core-${version}.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "${tarball}" | base64 -w0)"
if [[ "${actual}" != "${integrity}" ]]; then
    echo "integrity mismatch: registry says ${integrity}, tarball is ${actual}" >&2
    exit 1
fi
tar -xzf "${tarball}" -C "${work}"
mkdir -p "${target}"
cp "${work}/package/axe.min.js" "${work}/package/LICENSE" "${work}/package/LICENSE-3RD-PARTY.txt" "${target}/"
sri="sha256-$(openssl dgst -sha256 -binary "${target}/axe.min.js" | base64 -w0)"
cat >"${target}/PIN.json" <<JSON
{
  "package": "axe-core",
  "version": "${version}",
  "registry": "https://registry.npmjs.org/",
  "tarball_integrity": "${integrity}",
  "files": {
    "axe.min.js": "${sri}"
  },
  "licence": "MPL-2.0 (LICENSE; bundled third-party code in LICENSE-3RD-PARTY.txt)"
}
JSON
echo "vendored axe-core ${version} (${sri})"
