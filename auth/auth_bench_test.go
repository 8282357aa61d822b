package auth_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// BenchmarkAuthenticate measures the token check that every identified call
// makes, on each engine (Postgres with TEST_DATABASE_URL):
//
//   - recent: the token was used within the minute, so the check is one
//     SELECT; the common case of an agent making calls in a row;
//   - refresh: a minute has passed since its last use, so the check also
//     writes last_used_at; the case of every call of an agent that calls
//     less than once a minute.
//
// Compare runs with benchstat:
//
//	go test ./auth -run '^$' -bench Authenticate -count 10 > old.txt
func BenchmarkAuthenticate(b *testing.B) {
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			for _, c := range []struct {
				name string
				step time.Duration
			}{{"recent", 0}, {"refresh", time.Minute + time.Second}} {
				b.Run(c.name, func(b *testing.B) {
					a, token := benchToken(b, d)
					ctx := dbtest.Operator()
					orig, now := d.Now, d.Now()
					d.Now = func() time.Time { return now }
					defer func() { d.Now = orig }()
					b.ReportAllocs()
					for b.Loop() {
						now = now.Add(c.step)
						if _, err := a.Authenticate(ctx, token); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// benchToken creates a user in a new org of its own and returns a token of
// theirs that lasts far longer than any run.
func benchToken(b *testing.B, d *db.DB) (*auth.Service, string) {
	b.Helper()
	cfg := auth.DefaultConfig()
	cfg.BcryptCost = 4
	cfg.TokenTTL, cfg.IdleTTL = 100*365*24*time.Hour, 100*365*24*time.Hour
	a, err := auth.NewService(d, cfg)
	if err != nil {
		b.Fatal(err)
	}
	o := orgs.NewService(d, a)
	ctx := dbtest.Operator()
	var r [4]byte
	rand.Read(r[:])
	org := "bench-" + hex.EncodeToString(r[:])
	if _, err := o.Register(ctx, orgs.NewOrg{ID: org, Name: "Bench", AdminPassword: "bench-admin-password"}); err != nil {
		b.Fatal(err)
	}
	if _, err := o.AddUser(ctx, org, orgs.NewUser{ID: "alice", Name: "Alice", Password: "bench-user-password"}); err != nil {
		b.Fatal(err)
	}
	token, _, err := a.Login(ctx, org, "alice", "bench-user-password", "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	return a, token
}
