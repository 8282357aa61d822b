package auth

import (
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// These tests prove, without measuring time, that a login for an account
// that does not exist runs the same bcrypt comparison as a wrong password:
// bcrypt's key schedule allocates, so a path that skipped it would allocate
// less.

func TestDummyHashHasTheConfiguredCost(t *testing.T) {
	t.Parallel()
	for _, cost := range []int{4, 5} {
		s, err := NewService(nil, Config{BcryptCost: cost})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := bcrypt.Cost(s.dummyHash); err != nil || got != cost {
			t.Errorf("dummy hash cost %d (err %v), want %d", got, err, cost)
		}
	}
}

func TestUnknownAccountRunsBcrypt(t *testing.T) {
	s, err := NewService(nil, Config{BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	hash, err := s.HashPassword("password", "the-right-password", MinUserPasswordLen)
	if err != nil {
		t.Fatal(err)
	}
	wrong := testing.AllocsPerRun(20, func() { s.checkPassword(hash, "a-wrong-password") })
	if wrong == 0 {
		t.Fatal("a bcrypt comparison allocated nothing; this test cannot tell paths apart")
	}
	// A string-to-bytes conversion more or less is noise; bcrypt is not.
	long := strings.Repeat("p", 100)
	for name, f := range map[string]func(){
		"unknown account": func() { s.checkPassword("", "a-wrong-password") },
		"over 72 bytes":   func() { s.checkPassword(hash, long) },
	} {
		if got := testing.AllocsPerRun(20, f); got < wrong-2 {
			t.Errorf("%s: %v allocations, want about %v as for a wrong password (was bcrypt skipped?)", name, got, wrong)
		}
	}
	if s.checkPassword("", "ctalk-timing-equalizer") {
		t.Error("the dummy hash's own password logs in to an unknown account")
	}
}

// TestLoginOfUnknownUserComparesAgainstDummyHash breaks the dummy hash and
// watches the allocations of a login for a user that does not exist: if the
// login compared against it, bcrypt's work disappears with it.
func TestLoginOfUnknownUserComparesAgainstDummyHash(t *testing.T) {
	d := dbtest.Open(t, db.SQLite)
	cfg := DefaultConfig()
	cfg.BcryptCost, cfg.MaxFailures = 4, 1<<30
	s, err := NewService(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := dbtest.Operator()
	login := func() { s.Login(ctx, "acme", "ghost", "a-wrong-password", "") }
	login() // warm the connection pool and statement caches
	withHash := testing.AllocsPerRun(50, login)
	good := s.dummyHash
	s.dummyHash = []byte("broken")
	without := testing.AllocsPerRun(50, login)
	s.dummyHash = good
	if withHash-without < 3 {
		t.Errorf("login of an unknown user: %v allocations with the dummy hash, %v without; want bcrypt's share more (is the comparison skipped?)", withHash, without)
	}
}
