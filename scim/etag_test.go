package scim_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/ctalk/ctalk/db/dbtest"
)

// TestIfMatchRacingWrites: writes sent at once with the same If-Match, the
// version they all read, are checked in their own transactions: one
// passes and every other fails with 412, for a User's PATCH, PUT and
// DELETE (or 404, for a DELETE that comes after the user went) and a
// Group's PATCH; the User and Group hold the winner's change,
// one version on.
func TestIfMatchRacingWrites(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		const n = 6
		race := func(what string, send func(i int) (int, map[string]any), lost ...int) (winner int) {
			t.Helper()
			var (
				wg    sync.WaitGroup
				codes [n]int
			)
			for i := range n {
				wg.Go(func() { codes[i], _ = send(i) })
			}
			wg.Wait()
			winner = -1
			for i, c := range codes {
				switch {
				case c == 200 || c == 204:
					if winner >= 0 {
						t.Fatalf("%s: writes %d and %d both passed the same If-Match (%v)", what, winner, i, codes)
					}
					winner = i
				case c != 412 && !slices.Contains(lost, c):
					t.Fatalf("%s: write %d answered %d (%v)", what, i, c, codes)
				}
			}
			if winner < 0 {
				t.Fatalf("%s: no write passed (%v)", what, codes)
			}
			return winner
		}
		ifMatch := func(v string) http.Header { return http.Header{"If-Match": {v}} }
		if code, m, _ := callWith(t, e.srv.URL, e.token, "POST", "/Users", `{"userName":"jane@acme.test","active":true}`, nil); code != 201 {
			t.Fatalf("create: %d %v", code, m)
		}
		w := race("PATCH", func(i int) (int, map[string]any) {
			code, m, _ := callWith(t, e.srv.URL, e.token, "PATCH", "/Users/jane",
				fmt.Sprintf(`{"Operations":[{"op":"replace","path":"displayName","value":"Jane %d"}]}`, i), ifMatch(`W/"1"`))
			return code, m
		})
		u, err := e.srv.Orgs.User(dbtest.Operator(), "acme", "jane")
		if err != nil || u.Name != fmt.Sprintf("Jane %d", w) {
			t.Errorf("after racing PATCHes: %+v %v, want the winner's name Jane %d", u, err, w)
		}
		if _, m, resp := callWith(t, e.srv.URL, e.token, "GET", "/Users/jane", "", nil); resp.Header.Get("ETag") != `W/"2"` {
			t.Errorf("after racing PATCHes: ETag %q, want W/\"2\" (%v)", resp.Header.Get("ETag"), m)
		}
		race("PUT", func(i int) (int, map[string]any) {
			code, m, _ := callWith(t, e.srv.URL, e.token, "PUT", "/Users/jane",
				fmt.Sprintf(`{"userName":"jane@acme.test","displayName":"Jane PUT %d","active":true}`, i), ifMatch(`W/"2"`))
			return code, m
		})
		if code, m, _ := callWith(t, e.srv.URL, e.token, "POST", "/Groups", `{"displayName":"Ops"}`, nil); code != 201 {
			t.Fatalf("create a group: %d %v", code, m)
		}
		users := []string{"alice", "bob", "carol", "jane", "alice", "bob"}
		w = race("group PATCH", func(i int) (int, map[string]any) {
			code, m, _ := callWith(t, e.srv.URL, e.token, "PATCH", "/Groups/ops",
				fmt.Sprintf(`{"Operations":[{"op":"add","path":"members","value":[{"value":%q}]}]}`, users[i]), ifMatch(`W/"1"`))
			return code, m
		})
		if got, _, _ := e.channelMembers("ops"); !slices.Equal(got, []string{users[w]}) {
			t.Errorf("after racing group PATCHes: members %v, want only the winner's %s", got, users[w])
		}
		race("DELETE", func(int) (int, map[string]any) {
			code, m, _ := callWith(t, e.srv.URL, e.token, "DELETE", "/Users/jane", "", ifMatch(`W/"3"`))
			return code, m
		}, 404) // a DELETE that finds the user deleted already: not found
	})
}
