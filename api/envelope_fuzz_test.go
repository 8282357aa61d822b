package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCheckJSONRPC holds decodeJSONRPC, which decodes with segmentio's
// encoding/json for speed, to the answers the standard package gives for
// every body: the same refusal, kind and method, so that swapping the decoder
// changed nothing a client can see.
func FuzzCheckJSONRPC(f *testing.F) {
	for _, s := range []string{
		``, ` `, `null`, `{}`, `[]`, `[{}]`, `[`, `"x"`, `1`, `true`, `{}{}`, `{} x`, `{`, "\xff", "{\"jsonrpc\":\"2.0\xff\"}",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":null,"result":null}`, `{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`, `{"jsonrpc":2.0,"id":1,"method":"ping"}`, `{"id":1,"method":"ping"}`,
		`{"jsonrpc":null,"id":1,"method":"ping"}`, `{"jsonrpc":"2\u002e0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":null}`, `{"jsonrpc":"2.0","id":1,"method":7}`, `{"jsonrpc":"2.0","id":1,"method":["ping"]}`,
		`{"JSONRPC":"2.0","ID":1,"METHOD":"ping"}`, `{"Jsonrpc":"2.0","Method":"tools/list"}`, `{"jſonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"method":"ping"}`, `{"jsonrpc":"1.0","jsonrpc":"2.0","method":"a","method":"b"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,2,{"b":null}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":}}`, `{"jsonrpc":"2.0","id":1,"method":"ping",}`,
		`{"jsonrpc":"2.0","id":1,"method":"\ud800"}`, `{"jsonrpc":"2.0","id":1,"method":"a\u0000b"}`,
		" \t\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} \n",
		`"2.0"`, `"a\u00e9"`, "\"\xff\"", `"\ud800"`, `""`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":1e400}`, `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001),
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`,
	} {
		f.Add([]byte(s))
	}
	shorten := func(b []byte) []byte {
		if len(b) > 120 {
			return append(b[:120:120], "..."...)
		}
		return b
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		problem, msg := decodeJSONRPC(b)
		wantProblem, want := decodeEnvelope(b, json.Unmarshal)
		if problem != wantProblem || msg.Kind != want.Kind || msg.Method != want.Method || (msg.ID == nil) != (want.ID == nil) {
			t.Errorf("decodeJSONRPC(%q) = %q, %d, %q, id %q; the standard decoder gives %q, %d, %q, id %q",
				shorten(b), problem, msg.Kind, msg.Method, msg.ID, wantProblem, want.Kind, want.Method, want.ID)
		}
		// Both paths share jsonString's shortcut for strings without
		// escapes; hold it to the standard decoder on its own.
		// jsonString gets a value as decoded into a RawMessage: no space
		// around it. Null is not a string here, where the standard decoder
		// leaves a string as it was.
		if v := bytes.TrimSpace(b); json.Valid(v) {
			var want string
			werr := json.Unmarshal(v, &want)
			wantOK := werr == nil && string(v) != "null"
			got, ok := jsonString(v, json.Unmarshal)
			if ok != wantOK || got != want {
				t.Errorf("jsonString(%q) = %q, %v; the standard decoder gives %q, %v", shorten(v), got, ok, want, werr)
			}
		}
	})
}

// BenchmarkCheckJSONRPC compares the envelope decoding of a tools/call body
// with the decoder it uses and with the standard package's.
func BenchmarkCheckJSONRPC(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"whoami","arguments":{},"_meta":{"progressToken":17}}}`)
	b.Run("segmentio", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeJSONRPC(body)
		}
	})
	b.Run("standard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeEnvelope(body, json.Unmarshal)
		}
	})
}
