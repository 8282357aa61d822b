package tools

import (
	"encoding/json"
	"time"
)

// The REST mirror of the channel tools (in api) takes its arguments and
// gives its results as the tools do: these are the pieces it shares.

// Bounds of the channel tools' arguments.
const (
	// MaxSeq bounds an after argument.
	MaxSeq = maxSeq
	// DefaultMessages and MaxMessages are the default and largest number
	// of messages a read returns.
	DefaultMessages = defaultMessages
	MaxMessages     = maxMessages
)

// DecodeArgs decodes arguments strictly, as every tool does: unknown
// arguments, wrong types and missing or null required ones are refused
// with the argument's name.
//
// Returns EInvalid.
func DecodeArgs(raw json.RawMessage, dst any, required []string) error {
	return decodeArgs(raw, dst, required)
}

// IntArg validates an optional whole-number argument.
//
// Returns EInvalid.
func IntArg(name string, v *float64, def, lo, hi int) (int, error) {
	return intArg(name, v, def, lo, hi)
}

// WaitArg validates a timeout_s argument; values above wait.MaxWait are
// lowered to it.
//
// Returns EInvalid.
func WaitArg(v *float64) (time.Duration, error) { return waitArg(clampWait(v)) }
