package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
)

// TestConfigStartsFromPackageDefaults: with nothing set, the server runs
// with the auth and inbox packages' own defaults, and a variable changes
// only the setting it names.
func TestConfigStartsFromPackageDefaults(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig(environ{}.get)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Auth, auth.DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("auth settings = %+v, want the package defaults %+v", got, want)
	}
	if got, want := c.Inbox, inbox.DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("inbox settings = %+v, want the package defaults %+v", got, want)
	}

	set, err := LoadConfig(environ{"TOKEN_IDLE_TTL": "2h", "LOOP_WINDOW": "7m"}.get)
	if err != nil {
		t.Fatal(err)
	}
	wantAuth, wantInbox := auth.DefaultConfig(), inbox.DefaultConfig()
	wantAuth.IdleTTL, wantInbox.LoopWindow = 2*time.Hour, 7*time.Minute
	if !reflect.DeepEqual(set.Auth, wantAuth) || !reflect.DeepEqual(set.Inbox, wantInbox) {
		t.Errorf("with TOKEN_IDLE_TTL and LOOP_WINDOW set: auth %+v, inbox %+v; want %+v, %+v", set.Auth, set.Inbox, wantAuth, wantInbox)
	}
}
