#!/usr/bin/env bash
# Runs the destructive fault tests, which stop Postgres (immediate shutdown)
# and start it again under load. Every other user of that Postgres server
# breaks meanwhile, so run this only when nothing else uses it: in CI, as its
# own step after the ordinary tests.
#
#     TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable bash faults/run.sh
#
# It needs to run as root or postgres, for pg_ctlcluster. The cluster is
# CTALK_FAULTS_PG_CLUSTER ("15 main"), by default "main" of the newest
# version in /etc/postgresql; the test refuses to stop a cluster that does
# not serve TEST_DATABASE_URL. Extra arguments go to go test.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

: "${TEST_DATABASE_URL:?set TEST_DATABASE_URL to a database on the local Postgres cluster (.ci/run does)}"
if [ -z "${CTALK_FAULTS_PG_CLUSTER:-}" ]; then
	CTALK_FAULTS_PG_CLUSTER="$(ls /etc/postgresql | sort -V | tail -n 1) main"
fi
export CTALK_FAULTS=1 CTALK_FAULTS_PG_CLUSTER TEST_DATABASE_URL
read -r pg_version pg_cluster <<<"$CTALK_FAULTS_PG_CLUSTER"

# Whatever happens to the test, leave Postgres up for the steps after this one.
restore() {
	if ! pg_ctlcluster --skip-systemctl-redirect "$pg_version" "$pg_cluster" status >/dev/null 2>&1; then
		echo "faults: Postgres $pg_version $pg_cluster is down; starting it again"
		pg_ctlcluster --skip-systemctl-redirect "$pg_version" "$pg_cluster" start || true
	fi
	for _ in $(seq 1 30); do
		pg_isready -q -d "$TEST_DATABASE_URL" && return 0
		sleep 1
	done
	echo "faults: Postgres $pg_version $pg_cluster does not answer 30 s after the fault tests" >&2
}
trap restore EXIT

echo "faults: crashing and restarting Postgres $pg_version $pg_cluster under load"
go test -count=1 -timeout 4m -run '^TestPostgresRestart$' -v "$@" ./faults
