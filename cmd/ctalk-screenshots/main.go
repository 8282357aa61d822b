// Command ctalk-screenshots regenerates the screenshots of the web app that
// the README shows. It starts ctalk in this process on SQLite in a
// temporary directory, fills a demo organization with questions, drafts and
// answers, signs in with headless Chromium and captures the main pages,
// light and dark, two at a phone's width, the HTML part of the
// notification mail the demo person gets for a question, and the decision
// card a chat client that renders MCP Apps shows beside check_inbox, the
// Slack DM ctalk posts for a draft waiting for its person, drawn from
// the Block Kit blocks it posted to a stand-in for Slack's Web API, and
// single sign-on: the sign-in page's choice of it by work email, and its
// settings (a SAML provider, a domain verified at the command's stand-in
// for DNS, and one pending with its TXT record). A page
// the server does not serve is skipped with a message.
//
//	go run ./cmd/ctalk-screenshots -out docs/screenshots
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ctalk/ctalk/api"
	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/demo"
	"github.com/ctalk/ctalk/internal/outbound"
	"github.com/ctalk/ctalk/notify"
	"github.com/ctalk/ctalk/slackapp"
	"github.com/ctalk/ctalk/sso"
)

func main() {
	out := flag.String("out", "docs/screenshots", "the directory the PNG files are written to")
	chromium := flag.String("chromium", "", "the Chromium (or Chrome) binary; by default the first of chromium, chromium-browser, google-chrome on PATH")
	flag.Parse()
	if err := run(*out, *chromium); err != nil {
		fmt.Fprintln(os.Stderr, "ctalk-screenshots:", err)
		os.Exit(1)
	}
}

func run(out, chromium string) error {
	if chromium == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				chromium = p
				break
			}
		}
		if chromium == "" {
			return errors.New("no chromium on PATH: install it (apt-get install -y chromium) or pass -chromium")
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base, demo, stop, err := serve(ctx)
	if err != nil {
		return err
	}
	defer stop()
	return capture(ctx, chromium, base, demo, out)
}

// serve starts ctalk on 127.0.0.1:0 over a new SQLite database holding the
// demo organization, and returns its URL.
func serve(ctx context.Context) (base string, d *demo.Org, stop func(), err error) {
	dir, err := os.MkdirTemp("", "ctalk-screenshots-")
	if err != nil {
		return "", nil, nil, err
	}
	database, err := db.Open(ctx, db.Config{Path: filepath.Join(dir, "ctalk.db")})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, nil, err
	}
	// The demo is seeded at times in the past through this clock, which the
	// server's background work reads too.
	clock := demo.NewClock(database.Now)
	database.Now = clock.Now
	// The port is taken first, so that the links of the demo's mails can
	// name it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		database.Close()
		os.RemoveAll(dir)
		return "", nil, nil, err
	}
	sl, dns := &slackDemo{}, &dnsDemo{}
	a, mails, stopServer, err := start(database, ln, sl, dns)
	if err != nil {
		database.Close()
		os.RemoveAll(dir)
		return "", nil, nil, err
	}
	base = "http://" + ln.Addr().String()
	stop = func() {
		stopServer()
		database.Close()
		os.RemoveAll(dir)
	}
	d, err = demo.Seed(ctx, clock, a)
	if err != nil {
		stop()
		return "", nil, nil, fmt.Errorf("demo organization: %w", err)
	}
	sl.org.Store(d)
	if err := seedSSO(ctx, a, d, dns); err != nil {
		stop()
		return "", nil, nil, fmt.Errorf("demo single sign-on: %w", err)
	}
	if err := mails.wait(ctx, demo.Mail, demo.MailShown, 30*time.Second); err != nil {
		stop()
		return "", nil, nil, err
	}
	return base, d, stop, nil
}

// start serves ctalk over database on ln, with its mails kept in a mailbox
// that the same server shows at mailPath, and its Slack door calling sl's
// stand-in for Slack, whose DM the server shows at slackPath, and its
// email domains proven at dns; stop ends both, not database.
func start(database *db.DB, ln net.Listener, sl *slackDemo, dns *dnsDemo) (a *app.Assembly, mails *mailbox, stop func(), err error) {
	base := "http://" + ln.Addr().String()
	acfg := auth.DefaultConfig()
	acfg.BcryptCost = 4
	mails = &mailbox{}
	ncfg := notify.DefaultConfig()
	ncfg.DigestWindow = 0 // each notification its own mail
	a, err = app.Assemble(database, app.Wiring{
		API:    api.Config{Version: "demo", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), AllowOrgSignup: true, PublicURL: base},
		Auth:   acfg,
		Inbox:  inbox.DefaultConfig(),
		Sender: mails,
		Notify: ncfg,
		// The stand-in for Slack is this server, on loopback.
		Slack: slackapp.Config{APIURL: base + slackAPIPath, HTTP: outbound.Client(outbound.Options{AllowLoopback: true})},
		SSO:   sso.Config{Resolver: dns},
	})
	if err != nil {
		ln.Close()
		return nil, nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", a.Handler())
	mux.Handle(mailPath, mails)
	card := &lazy{open: (&cardDemo{a: a, base: base}).open}
	mux.Handle(cardPath, card)
	mux.Handle(cardPath+"/", card)
	sl.a, sl.base = a, base
	mux.Handle(slackPath, &lazy{open: sl.open})
	mux.Handle(slackAPIPath, &sl.api)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return a, mails, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.Close(ctx)
		srv.Shutdown(ctx)
	}, nil
}
