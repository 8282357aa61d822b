package outbound

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestClientRefusesNonPublicAddresses dials a real server on loopback: the
// production client refuses it before connecting, the development option
// reaches it, and neither reaches a private or link-local address.
func TestClientRefusesNonPublicAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/target", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	t.Run("production refuses loopback", func(t *testing.T) {
		_, err := Client(Options{}).Get(srv.URL)
		if err == nil || !Blocked(err) {
			t.Fatalf("got %v, want a BlockedError", err)
		}
	})
	t.Run("development reaches loopback", func(t *testing.T) {
		resp, err := Client(Options{AllowLoopback: true}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("got %d, want 204", resp.StatusCode)
		}
	})
	t.Run("redirects are not followed", func(t *testing.T) {
		resp, err := Client(Options{AllowLoopback: true}).Get(srv.URL + "/redirect")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("got %d, want the 302 itself", resp.StatusCode)
		}
	})
	for _, addr := range []string{"10.0.0.1:80", "192.168.1.1:80", "169.254.169.254:80", "100.64.0.1:80", "[fd00::1]:80", "0.0.0.0:80"} {
		t.Run("development refuses "+addr, func(t *testing.T) {
			_, err := Client(Options{AllowLoopback: true}).Get("http://" + addr + "/")
			if err == nil || !Blocked(err) {
				t.Fatalf("got %v, want a BlockedError", err)
			}
		})
	}
}

func TestPublicIP(t *testing.T) {
	for ip, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false,
		"192.168.0.1": false, "169.254.1.1": false, "100.100.0.1": false, "fe80::1": false,
	} {
		if got := PublicIP(net.ParseIP(ip)); got != want {
			t.Errorf("PublicIP(%s) = %v, want %v", ip, got, want)
		}
	}
}
