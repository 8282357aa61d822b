package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/app"
	"github.com/ctalk/ctalk/internal/appshost"
	"github.com/ctalk/ctalk/internal/demo"
	"github.com/ctalk/ctalk/internal/mcpclient"
)

// cardPath is where the screenshots' server shows the decision card, as a
// chat client that renders MCP Apps shows it beside check_inbox's result.
const cardPath = "/demo-card"

// cardDemo is the host of the decision card at cardPath. It is built on
// the first request (see lazy), once the demo is seeded: its check_inbox
// hands the demo person's questions to their agent, which the other pages
// would show, so the card is taken late.
type cardDemo struct {
	a    *app.Assembly
	base string
}

// lazy is a handler that open builds on the first request, for the pages
// whose making changes the demo that the pages before them show.
type lazy struct {
	open func(context.Context) (http.Handler, error)
	once sync.Once
	h    http.Handler
	err  error
}

func (l *lazy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.once.Do(func() { l.h, l.err = l.open(r.Context()) })
	if l.err != nil {
		http.Error(w, l.err.Error(), http.StatusInternalServerError)
		return
	}
	l.h.ServeHTTP(w, r)
}

// open signs the demo person's agent in through a client that renders MCP
// Apps, calls check_inbox, and returns the host showing its result.
func (c *cardDemo) open(ctx context.Context) (http.Handler, error) {
	token, _, err := c.a.Auth.Login(ctx, "acme", "alice", demo.Password, "127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("sign the demo's agent in: %w", err)
	}
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
	client := mcp.NewClient(&mcp.Implementation{Name: "ctalk-screenshots", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	// The session lives as long as the server: the card's buttons call
	// through it.
	cs, err := mcpclient.Open(context.Background(), c.base+"/mcp", mcpclient.Options{Client: client,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: bearer(token)}})
	if err != nil {
		return nil, fmt.Errorf("connect the demo's agent: %w", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "check_inbox", Arguments: map[string]any{}})
	if err != nil {
		return nil, fmt.Errorf("check_inbox: %w", err)
	}
	return appshost.New(ctx, cs, "ui://ctalk/decision-card", res, "decide_in_chat")
}

// bearer sends token with every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
