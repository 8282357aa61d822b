package inbox_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/inbox"
)

// TestConcurrentProposalsEachAddAVersion proposes 20 drafts of one answer
// at once: every call succeeds and adds its own version.
func TestConcurrentProposalsEachAddAVersion(t *testing.T) {
	t.Parallel()
	const drafts = 20
	dbtest.Run(t, func(t *testing.T, d *db.DB) {
		seed(t, d)
		s := newService(d)
		ctx := dbtest.Operator()
		q, err := s.Ask(ctx, acme("a"), inbox.Ask{To: "b", Text: "retry logic?"})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			versions []int
			start    = make(chan struct{})
		)
		for i := range drafts {
			wg.Go(func() {
				<-start
				dr, _, err := s.Propose(ctx, acme("b"), q.ID, fmt.Sprint("draft ", i))
				if err != nil {
					t.Errorf("propose %d: %v", i, err)
					return
				}
				mu.Lock()
				versions = append(versions, dr.Version)
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		slices.Sort(versions)
		want := make([]int, drafts)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(versions, want) {
			t.Fatalf("versions = %v, want 1 to %d once each", versions, drafts)
		}
	})
}
