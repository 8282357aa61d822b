package auth_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/orgs"
)

// BenchmarkRequestReset measures a "forgot password" request for a member
// with an address (a link is stored) and for an account that does not
// exist (nothing is): the two must cost about the same, so that the time
// of the answer does not tell which accounts exist. Each iteration asks
// from an address and for an account name of its own, clear of the limits.
//
//	go test ./auth -run '^$' -bench RequestReset -count 10 > reset.txt
func BenchmarkRequestReset(b *testing.B) {
	for _, e := range dbtest.Engines {
		b.Run(string(e), func(b *testing.B) {
			d := dbtest.Open(b, e)
			cfg := auth.DefaultConfig()
			cfg.BcryptCost = 4
			cfg.ResetMaxPerAccount = 1 << 30
			a, err := auth.NewService(d, cfg)
			if err != nil {
				b.Fatal(err)
			}
			o := orgs.NewService(d, a)
			ctx := dbtest.Operator()
			if _, err := o.Register(ctx, orgs.NewOrg{ID: "acme", Name: "Acme", AdminPassword: adminPW}); err != nil {
				b.Fatal(err)
			}
			if _, err := o.AddUser(ctx, "acme", orgs.NewUser{ID: "bob", Name: "Bob", Password: userPW, Email: "bob@example.com"}); err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct{ name, who string }{{"existing", "bob"}, {"unknown", "nobody"}} {
				b.Run(c.name, func(b *testing.B) {
					orig, now := d.Now, time.Now().UTC()
					d.Now = func() time.Time { return now }
					defer func() { d.Now = orig }()
					i := 0
					for b.Loop() {
						// A new hour each time keeps the member's links and the
						// address's requests under their limits.
						now = now.Add(2 * time.Hour)
						i++
						actx := auth.WithClientAddr(ctx, fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
						req, err := a.RequestReset(actx, "acme", c.who)
						if err != nil || (req.Token != "") != (c.who == "bob") {
							b.Fatalf("%+v, %v", req, err)
						}
					}
				})
			}
		})
	}
}
