package orgs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
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
			d := dbtest.Open(b, e)
			cfg := auth.DefaultConfig()
			cfg.BcryptCost = 4
			a, err := auth.NewService(d, cfg)
			if err != nil {
				b.Fatal(err)
			}
			o := orgs.NewService(d, a)
			ctx := context.Background()
			var r [4]byte
			rand.Read(r[:])
			org := "bench-" + hex.EncodeToString(r[:])
			if _, err := o.Register(ctx, orgs.NewOrg{ID: org, Name: "Bench", AdminPassword: adminPW}); err != nil {
				b.Fatal(err)
			}
			if _, err := o.AddUser(ctx, org, orgs.NewUser{ID: "alice", Name: "Alice", Password: userPW, Ownership: []string{"billing", "search"}}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := o.Member(ctx, org, "alice"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
