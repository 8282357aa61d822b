package auth_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// outcomes runs n attempts at once, attempt i from addr(i), and counts
// their error codes ("" for success).
func outcomes(t *testing.T, n int, attempt func(i int) error) map[ctalk.Code]int {
	t.Helper()
	var (
		mu    sync.Mutex
		got   = map[ctalk.Code]int{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := attempt(i)
			var code ctalk.Code
			if err != nil {
				code = ctalk.ErrorCode(err)
			}
			mu.Lock()
			got[code]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return got
}

// TestConcurrentWrongLoginsAreCountedBeforeTheCheck sends 30 wrong passwords
// for one account at once: only as many reach the password check (and
// answer "login failed") as the limits allow; the rest are refused as too
// many attempts.
func TestConcurrentWrongLoginsAreCountedBeforeTheCheck(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) {
			c.MaxFailures, c.AccountMaxFailures = 10, 15
			c.IPBurst = 1000
		})
		ctx := dbtest.Operator()
		for _, tc := range []struct {
			name    string
			user    string
			addr    func(i int) string
			checked int
		}{
			{"from one address", "bob", func(int) string { return "198.51.100.1" }, 10},
			{"from 30 addresses", "alice", func(i int) string { return fmt.Sprintf("203.0.113.%d", i+1) }, 15},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := outcomes(t, 30, func(i int) error {
					_, _, err := f.auth.Login(ctx, "acme", tc.user, "wrong-password", tc.addr(i))
					return err
				})
				if got[ctalk.EUnauthorized] != tc.checked || got[ctalk.ERateLimited] != 30-tc.checked {
					t.Errorf("outcomes %v: want %d checked (unauthorized) and %d refused (rate_limited)", got, tc.checked, 30-tc.checked)
				}
			})
		}
	})
}

// TestStrangerCannotLockTheOwnerOut: an address that spends its failures on
// an account holds back only itself; the owner logs in from elsewhere. Only
// failures from many addresses, past the much higher account-wide ceiling,
// hold the account, which still bounds a distributed guesser.
func TestStrangerCannotLockTheOwnerOut(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) { c.MaxFailures, c.AccountMaxFailures = 10, 25 })
		ctx := dbtest.Operator()
		const attacker, owner = "198.51.100.66", "203.0.113.5"
		for range 10 {
			_, _, err := f.auth.Login(ctx, "acme", "bob", "guess", attacker)
			wantCode(t, err, ctalk.EUnauthorized, "login failed")
		}
		_, _, err := f.auth.Login(ctx, "acme", "bob", userPW, attacker)
		wantCode(t, err, ctalk.ERateLimited, "from your address")
		if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, owner); err != nil {
			t.Fatalf("the owner is locked out by a stranger's failures: %v", err)
		}
		// The owner's success does not reset the stranger's count.
		_, _, err = f.auth.Login(ctx, "acme", "bob", userPW, attacker)
		wantCode(t, err, ctalk.ERateLimited, "from your address")

		// The same for the org's admin password.
		actx := auth.WithClientAddr(ctx, attacker)
		for range 10 {
			wantCode(t, f.auth.VerifyAdminPassword(actx, "acme", "guess guess guess"), ctalk.EUnauthorized, "wrong")
		}
		wantCode(t, f.auth.VerifyAdminPassword(actx, "acme", adminPW), ctalk.ERateLimited, "from your address")
		if err := f.auth.VerifyAdminPassword(auth.WithClientAddr(ctx, owner), "acme", adminPW); err != nil {
			t.Fatalf("the admin is locked out by a stranger's failures: %v", err)
		}

		// A guesser spread over addresses meets the account-wide ceiling:
		// 10 failures above plus 15 more, 3 from each of 5 addresses.
		for i := range 15 {
			_, _, err := f.auth.Login(ctx, "acme", "bob", "guess", fmt.Sprintf("192.0.2.%d", i/3+1))
			wantCode(t, err, ctalk.EUnauthorized, "login failed")
		}
		for _, addr := range []string{"192.0.2.200", owner} {
			_, _, err := f.auth.Login(ctx, "acme", "bob", userPW, addr)
			wantCode(t, err, ctalk.ERateLimited, "from many addresses")
		}
		// Other accounts of the org are not held.
		if _, _, err := f.auth.Login(ctx, "acme", "alice", userPW, "192.0.2.200"); err != nil {
			t.Errorf("alice is held by failures on bob: %v", err)
		}
	})
}

// TestAdminPasswordChecksAreBounded: admin-password checks, each a bcrypt
// compare, are bounded per client address even on org ids that do not
// exist, and per org and address in the database.
func TestAdminPasswordChecksAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) { c.IPRate, c.IPBurst = 0.001, 5 })
		ctx := auth.WithClientAddr(dbtest.Operator(), "198.51.100.9")
		for i := range 5 {
			wantCode(t, f.auth.VerifyAdminPassword(ctx, fmt.Sprintf("nosuch%d", i), adminPW), ctalk.ENotFound, "not found")
		}
		wantCode(t, f.auth.VerifyAdminPassword(ctx, "acme", adminPW), ctalk.ERateLimited, "too many attempts from this address")
		// Logins have a budget of their own, and so has another address.
		if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "198.51.100.9"); err != nil {
			t.Errorf("login from an address whose admin-password budget is spent: %v", err)
		}
		if err := f.auth.VerifyAdminPassword(auth.WithClientAddr(ctx, "198.51.100.10"), "acme", adminPW); err != nil {
			t.Errorf("another address: %v", err)
		}
	})
}

// TestIPv6NetworksShareABudget: the addresses of one IPv6 /64 are one client
// for the per-address limits.
func TestIPv6NetworksShareABudget(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) { c.IPRate, c.IPBurst = 0.001, 2 })
		ctx := dbtest.Operator()
		for _, addr := range []string{"2001:db8:1:2::1", "2001:db8:1:2::ffff"} {
			if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, addr); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "2001:db8:1:2:aaaa::7")
		wantCode(t, err, ctalk.ERateLimited, "from this address")
		if _, _, err := f.auth.Login(ctx, "acme", "bob", userPW, "2001:db8:1:3::1"); err != nil {
			t.Errorf("another /64: %v", err)
		}
		// An IPv4 address mapped into IPv6 is the IPv4 address.
		for range 2 {
			f.auth.Login(ctx, "acme", "bob", userPW, "192.0.2.44")
		}
		_, _, err = f.auth.Login(ctx, "acme", "bob", userPW, "::ffff:192.0.2.44")
		wantCode(t, err, ctalk.ERateLimited, "from this address")
	})
}

// TestChecksRunningAreNotFailures: 20 correct admin passwords at once from
// one address, more than the failures the address may have, all pass: a
// check still running holds the others back only until it ends. The same
// after failures short of the limit. A refusal after real failures names
// the real wait: until the oldest of them leaves the window.
func TestChecksRunningAreNotFailures(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) { c.IPBurst = 1000 })
		ctx := auth.WithClientAddr(dbtest.Operator(), "198.51.100.7")
		correct := func(int) error { return f.auth.VerifyAdminPassword(ctx, "acme", adminPW) }
		if got := outcomes(t, 20, correct); got[""] != 20 {
			t.Fatalf("20 correct admin passwords at once: %v, want all 20 accepted", got)
		}
		for range 9 {
			wantCode(t, f.auth.VerifyAdminPassword(ctx, "acme", "wrong admin password"), ctalk.EUnauthorized, "admin password")
		}
		if got := outcomes(t, 20, correct); got[""] != 20 {
			t.Fatalf("20 correct admin passwords at once after 9 failures: %v, want all 20 accepted", got)
		}
		for range 10 {
			wantCode(t, f.auth.VerifyAdminPassword(ctx, "acme", "wrong admin password"), ctalk.EUnauthorized, "admin password")
		}
		f.clock.advance(5 * time.Minute)
		err := f.auth.VerifyAdminPassword(ctx, "acme", adminPW)
		wantCode(t, err, ctalk.ERateLimited, "(in 10m0s): this account failed too often from your address")
		if got := outcomes(t, 20, correct); got[ctalk.ERateLimited] != 20 {
			t.Errorf("20 correct admin passwords at once after 10 failures: %v, want all 20 refused", got)
		}
	})
}

// TestDeviceCookieKeepsItsOwnBudget: strangers guessing bob's password at
// once from 30 addresses lock his account (the account's limit), yet the
// browser he signed in from before, holding its device cookie, still signs
// him in; its own wrong passwords, also sent at once, are bounded by a
// budget of their own, after which it is refused too, while neither the
// strangers' count nor its own lets more checks through than the limits.
func TestDeviceCookieKeepsItsOwnBudget(t *testing.T) {
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		f := setup(t, d, func(c *auth.Config) {
			c.MaxFailures, c.AccountMaxFailures = 5, 15
			c.IPBurst = 1000
		})
		ctx := dbtest.Operator()
		_, _, device, err := f.auth.SignInOnDevice(ctx, "acme", "bob", userPW, "198.51.100.7", "")
		if err != nil || device == "" {
			t.Fatalf("first sign-in: device %q, %v", device, err)
		}
		strangers := outcomes(t, 30, func(i int) error {
			_, _, _, err := f.auth.SignInOnDevice(ctx, "acme", "bob", "wrong-password", fmt.Sprintf("203.0.113.%d", i+1), "")
			return err
		})
		if strangers[ctalk.EUnauthorized] != 15 || strangers[ctalk.ERateLimited] != 15 {
			t.Fatalf("strangers' outcomes %v: want 15 checked and 15 refused", strangers)
		}
		if _, _, _, err := f.auth.SignInOnDevice(ctx, "acme", "bob", userPW, "198.51.100.9", ""); ctalk.ErrorCode(err) != ctalk.ERateLimited {
			t.Fatalf("a browser without a device cookie signs in to the locked account: %v", err)
		}
		if _, _, again, err := f.auth.SignInOnDevice(ctx, "acme", "bob", userPW, "198.51.100.9", device); err != nil || again != "" {
			t.Fatalf("the owner's browser with its device cookie: new cookie %q, %v", again, err)
		}
		// The cookie names bob's account only.
		if _, _, _, err := f.auth.SignInOnDevice(ctx, "acme", "alice", "wrong-password", "198.51.100.9", device); ctalk.ErrorCode(err) != ctalk.EUnauthorized {
			t.Fatalf("alice's wrong password with bob's cookie: %v", err)
		}
		owner := outcomes(t, 12, func(int) error {
			_, _, _, err := f.auth.SignInOnDevice(ctx, "acme", "bob", "wrong-password", "198.51.100.9", device)
			return err
		})
		if owner[ctalk.EUnauthorized] != 5 || owner[ctalk.ERateLimited] != 7 {
			t.Fatalf("wrong passwords from the device cookie %v: want 5 checked and 7 refused", owner)
		}
		if _, _, _, err := f.auth.SignInOnDevice(ctx, "acme", "bob", userPW, "198.51.100.9", device); ctalk.ErrorCode(err) != ctalk.ERateLimited {
			t.Fatalf("the device cookie after its budget is spent: %v", err)
		}
		f.clock.advance(16 * time.Minute)
		if _, _, _, err := f.auth.SignInOnDevice(ctx, "acme", "bob", userPW, "198.51.100.9", device); err != nil {
			t.Fatalf("the device cookie after the window: %v", err)
		}
	})
}
