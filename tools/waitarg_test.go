package tools

import (
	"math"
	"testing"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/wait"
)

// TestWaitArg checks the timeout_s rule of the README: 0 to 120 seconds,
// larger values (however large) lowered to 120, anything else refused.
func TestWaitArg(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want time.Duration
	}{
		{0, 0},
		{0.25, 250 * time.Millisecond},
		{30, 30 * time.Second},
		{120, wait.MaxWait},
		{121, wait.MaxWait},
		{1e10, wait.MaxWait},
		{1e300, wait.MaxWait},
		{math.MaxFloat64, wait.MaxWait},
		{math.Inf(1), wait.MaxWait},
	} {
		got, err := waitArg(&tc.in)
		if err != nil || got != tc.want {
			t.Errorf("waitArg(%g) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []float64{-1, -1e300, math.Inf(-1), math.NaN()} {
		if got, err := waitArg(&in); ctalk.ErrorCode(err) != ctalk.EInvalid {
			t.Errorf("waitArg(%g) = %v, %v; want an invalid-argument error", in, got, err)
		}
	}
	if got, err := waitArg(nil); err != nil || got != defaultWait {
		t.Errorf("waitArg(nil) = %v, %v; want %v", got, err, defaultWait)
	}
}
