#!/usr/bin/env bash
# The test command of zerodial: the race tests of every module of this
# repository — every directory with a go.mod, found afresh each run (the
# root, otelzerodial, httpzerodial, cmd/zerodial, grpczerodial,
# etcdzerodial and bench today) — one after another, `go test -race -count=1 -timeout 30m ./...`
# in each: under the race detector on 2 busy cores, httpzerodial's tests
# (the conformance suite over its HTTP paths among them) take 7 to 9
# minutes, near go test's default limit of 10. Arguments go to each go
# test (./test.sh -run TestName -v). It goes on through every module and
# fails at the end, naming the modules that failed. .ci/run runs it;
# etcdzerodial's tests start an etcd of their own, and httpzerodial's
# call the curl binary and a headless Chromium where they are.
set -uo pipefail
cd "$(dirname "$0")"

# Hidden directories, testdata and vendor hold no module of ours.
mapfile -t modules < <(find . \( -path '*/.*' -o -name testdata -o -name vendor \) -prune -o -name go.mod -print |
	xargs -n1 dirname | sort)
if [ ${#modules[@]} -eq 0 ]; then
	echo "test.sh: no go.mod found" >&2
	exit 2
fi

failed=()
for mod in "${modules[@]}"; do
	printf '\n== %s: go test -race -count=1 -timeout 30m %s./...\n' "$mod" "${*:+$* }"
	if ! (cd "$mod" && go test -race -count=1 -timeout 30m "$@" ./...); then
		failed+=("$mod")
	fi
done
if [ ${#failed[@]} -ne 0 ]; then
	printf '\n== FAIL in %d of %d modules: %s\n' "${#failed[@]}" "${#modules[@]}" "${failed[*]}"
	exit 1
fi
printf '\n== ok: all %d modules (%s)\n' "${#modules[@]}" "${modules[*]}"
