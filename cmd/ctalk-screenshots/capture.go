package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/ctalk/ctalk/internal/demo"
)

// shot is one screenshot: a page, in a scheme, at a size.
type shot struct {
	Name   string // the file, without .png
	Path   string
	Dark   bool
	Phone  bool
	Signed bool // signed in as the demo person
	// Live, when set, asks a question once the page is open and waits
	// for the page to announce it.
	Live bool
	// Images, when set, waits for the images in the window to be drawn:
	// the overview's charts.
	Images bool
	// Card, when set, waits for the decision card to show its questions.
	Card bool
	// Height, when set, is the window's height instead of a laptop's: a
	// page shorter than the window.
	Height int64
	// Type, when set, types its text into the field of its id, which the
	// page is then scrolled to.
	Type *typed
}

// typed is a field's id and the text typed into it.
type typed struct{ ID, Text string }

// shots are the screenshots, signed out first. Few and small: the README
// shows them all.
func shots(d *demo.Org) []shot {
	return []shot{
		{Name: "home", Path: "/"},
		{Name: "signin", Path: "/signin"},
		{Name: "sso-signin", Path: "/signin", Type: &typed{ID: "sso-org", Text: "alice@" + ssoVerified}},
		{Name: "inbox", Path: "/inbox", Signed: true},
		{Name: "inbox-dark", Path: "/inbox", Signed: true, Dark: true},
		{Name: "inbox-phone", Path: "/inbox", Signed: true, Phone: true},
		{Name: "question-phone", Path: "/inbox/" + d.Question + "#v1", Signed: true, Phone: true},
		{Name: "inbox-live", Path: "/inbox", Signed: true, Live: true},
		{Name: "question", Path: "/inbox/" + d.Question, Signed: true},
		{Name: "asked", Path: "/asked", Signed: true},
		{Name: "people", Path: "/people", Signed: true},
		{Name: "knowledge", Path: "/knowledge?q=alpha-repo+backoff", Signed: true},
		{Name: "channel", Path: "/channels/payments", Signed: true},
		{Name: "tokens", Path: "/tokens", Signed: true, Dark: true},
		{Name: "admin", Path: "/admin", Signed: true},
		{Name: "overview", Path: "/admin/overview", Signed: true, Images: true},
		{Name: "overview-dark", Path: "/admin/overview?days=7#ov-calls", Signed: true, Dark: true, Images: true},
		{Name: "notifications", Path: "/profile/notifications", Signed: true},
		{Name: "sso-admin", Path: "/admin/sso#sso-key", Signed: true, Height: 900},
		{Name: "notification-mail", Path: mailURL(demo.Mail, demo.MailShown)},
		// Late: its check_inbox hands the questions to the agent.
		{Name: "card", Path: cardPath, Card: true},
		// Last: it switches the organization to human approval.
		{Name: "slack", Path: slackPath, Height: 420},
	}
}

// Sizes, in CSS pixels: a laptop window, and a phone's at twice the density.
const (
	wideW, wideH   = 1000, 700
	phoneW, phoneH = 390, 760
)

// capture signs in on Chromium and writes each screenshot to out.
func capture(ctx context.Context, chromium, base string, d *demo.Org, out string) error {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	signedIn := false
	for _, s := range shots(d) {
		if s.Signed && !signedIn {
			if err := signIn(tab, base, d); err != nil {
				return err
			}
			signedIn = true
		}
		png, err := take(tab, base, s, d)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Path, err)
		}
		if png == nil {
			continue
		}
		file := filepath.Join(out, s.Name+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s  %s (%d KB)\n", file, s.Path, len(png)/1024)
	}
	return nil
}

// take opens one page as the shot says and captures the window; it returns
// nil, saying so, when the server does not serve the page.
func take(tab context.Context, base string, s shot, d *demo.Org) ([]byte, error) {
	scheme := "light"
	if s.Dark {
		scheme = "dark"
	}
	w, h, scale := int64(wideW), int64(wideH), 1.0
	if s.Phone {
		w, h, scale = phoneW, phoneH, 2
	}
	if s.Height > 0 {
		h = s.Height
	}
	err := chromedp.Do(tab,
		chromedp.EmulateViewport(w, h, chromedp.EmulateScale(scale)),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}),
	)
	if err != nil {
		return nil, err
	}
	resp, err := chromedp.RunResponse(tab, chromedp.Navigate(base+s.Path))
	if err != nil {
		return nil, err
	}
	if resp == nil || resp.Status == 404 || resp.Status == 405 {
		fmt.Printf("skipped %s: this server has no such page yet\n", s.Path)
		return nil, nil
	}
	if resp.Status >= 400 {
		return nil, fmt.Errorf("the page answered %d", resp.Status)
	}
	if s.Type != nil {
		if err := chromedp.Do(tab, chromedp.ScrollIntoView(chromedp.ID(s.Type.ID)), chromedp.SendKeys(chromedp.ID(s.Type.ID), s.Type.Text)); err != nil {
			return nil, fmt.Errorf("type into #%s: %w", s.Type.ID, err)
		}
	}
	if s.Live {
		if err := live(tab, d); err != nil {
			return nil, err
		}
	}
	if s.Images {
		if _, err := chromedp.Run(tab, chromedp.Evaluate[[]any](`Promise.all([...document.images].filter(i => i.getBoundingClientRect().top < innerHeight)
			.map(i => i.decode().catch(() => null)))`, chromedp.EvalAwaitPromise)); err != nil {
			return nil, fmt.Errorf("wait for the charts: %w", err)
		}
	}
	if s.Card {
		if _, err := chromedp.Run(tab, chromedp.Poll[bool](`(() => { const d = document.getElementById("card").contentDocument;
			const cards = d ? [...d.querySelectorAll("article")] : [];
			return cards.length > 0 && cards.every(a => a.querySelector("h2")); })()`,
			chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			return nil, fmt.Errorf("the card did not show its questions: %w", err)
		}
	}
	return chromedp.Run(tab, chromedp.CaptureScreenshot())
}

// signIn signs the demo person in on the sign-in page.
func signIn(tab context.Context, base string, d *demo.Org) error {
	err := chromedp.Do(tab,
		chromedp.Navigate(base+"/signin"),
		chromedp.WaitVisible(chromedp.ID("org_id")),
		chromedp.SendKeys(chromedp.ID("org_id"), d.OrgID),
		chromedp.SendKeys(chromedp.ID("user_id"), d.UserID),
		chromedp.SendKeys(chromedp.ID("password"), demo.Password+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("header.top")),
	)
	if err != nil {
		return fmt.Errorf("sign in as %s/%s: %w", d.OrgID, d.UserID, err)
	}
	return nil
}

// live asks a question while the page is open and waits for its
// announcement.
func live(tab context.Context, d *demo.Org) error {
	if err := chromedp.Do(tab, chromedp.WaitReady(chromedp.CSS(`body[data-live="open"]`))); err != nil {
		return fmt.Errorf("live updates did not start: %w", err)
	}
	if err := d.Ask(tab); err != nil {
		return err
	}
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(".live a"))); err != nil {
		return fmt.Errorf("the page did not announce the question: %w", err)
	}
	return nil
}
