package tools_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHugeWaitTimeoutsWait calls both waiting tools with timeouts far past
// the cap, which once overflowed into an immediate timed_out: each must
// still be waiting when the thing it waits for happens, and return it.
func TestHugeWaitTimeoutsWait(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env, era string) {
		s := e.Org(t, era, "acme")
		for _, timeout := range []float64{1e10, 1e300} {
			got := waitThrough(t, e, s["bob"], "wait_for_inbox", map[string]any{"timeout_s": timeout}, func() {
				ok(t, s["alice"], "ask_person", map[string]any{"to_user_id": "bob", "question": "retry logic?"})
			})
			if got["timed_out"] != false || len(got["questions"].([]any)) != 1 {
				t.Fatalf("wait_for_inbox with timeout_s %g: %s; want the question asked while it waited", timeout, mustJSON(got))
			}

			q := ok(t, s["alice"], "ask_person", map[string]any{"to_user_id": "carol", "question": "deploy day?"})
			id := q["message_id"].(string)
			got = waitThrough(t, e, s["alice"], "wait_for_reply", map[string]any{"message_id": id, "timeout_s": timeout}, func() {
				ok(t, s["carol"], "decline_question", map[string]any{"message_id": id, "reason": "ask bob"})
			})
			if got["timed_out"] != false || len(got["replies"].([]any)) != 1 {
				t.Fatalf("wait_for_reply with timeout_s %g: %s; want the decline made while it waited", timeout, mustJSON(got))
			}
		}
	})
}

// waitThrough calls a waiting tool, runs act once the call is waiting, and
// returns the call's result. A call that returns before act ran fails the
// test.
func waitThrough(t *testing.T, e *env, cs *mcp.ClientSession, tool string, args map[string]any, act func()) map[string]any {
	t.Helper()
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	before := e.Broker.Waiting()
	go func() {
		ctx, cancel := context.WithTimeout(dbtest.Operator(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		done <- result{res, err}
	}()
	for e.Broker.Waiting() == before {
		select {
		case r := <-done:
			t.Fatalf("%s %v returned before anything happened: %v %v", tool, args, r.err, mustJSON(r.res))
		case <-time.After(time.Millisecond):
		}
	}
	act()
	r := <-done
	if r.err != nil || r.res.IsError {
		t.Fatalf("%s: %v %s", tool, r.err, mustJSON(r.res))
	}
	b, _ := json.Marshal(r.res.StructuredContent)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}
