package orgs_test

import (
	"testing"

	"github.com/ctalk/ctalk/db/dbtest"
)

// BenchmarkMember measures what whoami reads on every call, the caller and
// their org, on each engine (Postgres with TEST_DATABASE_URL), one call
// after another for the same member, as an agent calling in a row does.
//
// Compare runs with benchstat:
//
//	go test ./orgs -run '^$' -bench Member -count 6 > old.txt
func BenchmarkMember(b *testing.B) {
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			f := newFixture(b, dbtest.Open(b, e))
			f.twoOrgs(b)
			ctx := dbtest.Operator()
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := f.orgs.Member(ctx, "a", "bob"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
