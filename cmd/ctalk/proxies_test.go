package main

import (
	"strings"
	"testing"
)

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		env    environ
		header string
		nets   string // the first networks, space-separated
		count  int
		bad    string
	}{
		{"unset: nobody is trusted", environ{}, "X-Forwarded-For", "", 0, ""},
		{"none", environ{"TRUSTED_PROXIES": "none"}, "X-Forwarded-For", "", 0, ""},
		{"networks and addresses", environ{"TRUSTED_PROXIES": " 10.1.2.3/8, 192.0.2.7 ,fd00::/8"}, "X-Forwarded-For", "10.0.0.0/8 192.0.2.7/32 fd00::/8", 3, ""},
		{"railway", environ{"TRUSTED_PROXIES": "railway"}, "X-Real-IP", "100.64.0.0/10", 1, ""},
		{"render", environ{"TRUSTED_PROXIES": "Render"}, "X-Forwarded-For", "10.0.0.0/8 173.245.48.0/20", 23, ""},
		{"on Railway by default", environ{"RAILWAY_PROJECT_ID": "3f0c"}, "X-Real-IP", "100.64.0.0/10", 1, ""},
		{"on Render by default", environ{"RENDER": "true"}, "X-Forwarded-For", "10.0.0.0/8", 23, ""},
		{"the setting wins over the platform", environ{"RENDER": "true", "TRUSTED_PROXIES": "none"}, "X-Forwarded-For", "", 0, ""},
		{"a platform plus a network", environ{"TRUSTED_PROXIES": "railway,192.0.2.0/24"}, "X-Real-IP", "100.64.0.0/10 192.0.2.0/24", 2, ""},
		{"two platforms that disagree", environ{"TRUSTED_PROXIES": "railway,render"}, "", "", 0, "TRUSTED_PROXIES: \"render\" names its client in X-Forwarded-For"},
		{"junk", environ{"TRUSTED_PROXIES": "10.0.0.0/8,everyone"}, "", "", 0, "TRUSTED_PROXIES: \"everyone\" is not a network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig(tc.env.get)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("error %v, want one containing %q", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range c.TrustedProxies {
				got = append(got, p.String())
			}
			if c.ClientIPHeader != tc.header || len(got) != tc.count || !strings.HasPrefix(strings.Join(got, " "), tc.nets) {
				t.Errorf("header %q, networks %v: want %q and %d networks starting %q", c.ClientIPHeader, got, tc.header, tc.count, tc.nets)
			}
		})
	}
}
