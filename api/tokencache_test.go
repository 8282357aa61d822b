package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/internal/testkit"
)

// awaitRefused waits until cs's token is refused by three calls in a row
// (through a round-robin balancer, by every replica), for at most a generous
// deadline: a token row changed behind the server's back (as the tests that
// age a token do), or revoked on another replica, is refused within
// auth.TokenCacheTTL, when the replica's cached check of it expires.
func awaitRefused(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	inRow := 0
	err := testkit.Poll(context.Background(), 10*time.Second+auth.TokenCacheTTL, 10*time.Millisecond, func() (bool, error) {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
		if err != nil && strings.Contains(err.Error(), "Unauthorized") {
			inRow++
		} else {
			inRow = 0
		}
		return inRow == 3, nil
	})
	if err != nil {
		t.Fatal("the token is still accepted")
	}
}
