// Package bridge is "ctalk stdio": a local MCP server on standard input and
// output that forwards to a hosted ctalk server, for MCP clients that can
// start a command but cannot connect over HTTP. It offers the hosted
// server's tools and instructions unchanged, forwards every call over an
// internal/mcpclient session (either protocol era), reconnects when that
// session is lost, relays progress, and turns the hosted server's refusals
// into one line saying what to check.
package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

// Help is printed by "ctalk stdio --help".
const Help = `ctalk stdio: a local MCP server on standard input and output that forwards
to a hosted ctalk server.

It is for MCP clients that can start a local command but cannot connect to a
remote server over HTTP. Clients that can (Claude Code, Cursor, ...) should add
https://HOST/mcp directly instead.

At start it connects to the hosted server, then offers that server's tools
unchanged (names, descriptions, schemas, annotations) and its instructions,
and forwards every tool call, returning the hosted server's result as it is.
Waiting tools (wait_for_inbox, wait_for_reply) may block up to 120 s; the
bridge never cuts them short.

Usage:
  ctalk stdio --url URL [--token TOKEN]

Flags:
  --url URL       the hosted ctalk server, e.g. https://ctalk.example.com
                  (an address ending in /mcp works too)
  --token TOKEN   your ctalk token (ctalk_...), from the login tool; by default
                  the CTALK_TOKEN environment variable. Prefer the variable: a
                  flag can be seen by other users of this computer.

The token is sent to the hosted server as "Authorization: Bearer" on every
request and is never logged. Without one, the bridge opts in to the hosted
server's anonymous set-up (the header X-Ctalk-Setup: 1), and only the tools
that need no login work (register_organization, register_user, login, ...).

Example MCP client configuration:
  {
    "mcpServers": {
      "ctalk": {
        "command": "ctalk",
        "args": ["stdio", "--url", "https://HOST"],
        "env": {"CTALK_TOKEN": "ctalk_..."}
      }
    }
  }

Standard output carries only MCP messages; logs go to standard error. If the
hosted server cannot be reached at start, the bridge exits with status 1 and
one line on standard error saying what to check.
`

// Bridge timeouts. Forwarded calls have none of their own: they last as long
// as the local client's request, because waiting tools block for up to 120 s.
const (
	// startTimeout bounds connecting and listing tools at start, so that
	// a server that never answers is reported instead of hanging the client.
	startTimeout = 30 * time.Second
	// reconnectTimeout bounds reconnecting before a call, after the
	// connection to the hosted server was lost.
	reconnectTimeout = 15 * time.Second
)

// Config is what "ctalk stdio" reads from its flags and environment.
type Config struct {
	// Endpoint is the hosted server's MCP address, ending in /mcp.
	Endpoint string
	// Token is sent as a bearer token; empty sends none.
	Token string
	// Version is the bridge's own version, which it gives the hosted
	// server as its client's.
	Version string
	// Dial, when set, opens the connections to the server in place of
	// the network's dialer: "ctalk stdio --local" serves its app on a
	// Unix socket in a folder of the machine account's alone.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// protocolVersion is the protocol offered to the hosted server; empty
	// means the newest the SDK speaks, falling back to what the server
	// supports. Tests set it to cover both protocol eras.
	protocolVersion string
}

// ParseArgs reads the flags of "ctalk stdio". It returns flag.ErrHelp
// when help was asked for.
func ParseArgs(args []string, getenv func(string) string) (Config, error) {
	fs := flag.NewFlagSet("ctalk stdio", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rawURL := fs.String("url", "", "")
	token := fs.String("token", "", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, fmt.Errorf("stdio: %v; see \"ctalk stdio --help\"", err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("stdio: unexpected argument %q; see \"ctalk stdio --help\"", fs.Arg(0))
	}
	if strings.TrimSpace(*rawURL) == "" {
		return Config{}, errors.New("stdio needs --url, the address of the hosted ctalk server, e.g. \"ctalk stdio --url https://ctalk.example.com\"; see \"ctalk stdio --help\"")
	}
	endpoint, err := mcpEndpoint(*rawURL)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Endpoint: endpoint, Token: strings.TrimSpace(*token)}
	if cfg.Token == "" {
		cfg.Token = strings.TrimSpace(getenv("CTALK_TOKEN"))
	}
	return cfg, nil
}

// mcpEndpoint turns the server address a person gives (the base, or the
// /mcp address itself) into the MCP endpoint.
func mcpEndpoint(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("stdio: --url %q is not an http or https address such as https://ctalk.example.com", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(u.Path, "/mcp") {
		u.Path += "/mcp"
	}
	u.RawPath, u.Fragment = "", ""
	return u.String(), nil
}

// Run connects to the hosted server named in cfg and serves its tools on
// in and out until in is closed or ctx ends. Logs go to stderr, never to
// out, which carries only MCP messages.
func Run(ctx context.Context, cfg Config, in io.Reader, out, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if u, _ := url.Parse(cfg.Endpoint); u.Scheme == "http" && !isLoopback(u.Hostname()) && cfg.Token != "" {
		log.Warn("the hosted server's address is plain http: the token crosses the network unencrypted; use https")
	}
	if cfg.Token == "" {
		log.Warn("no token (--token or CTALK_TOKEN): only the tools that need no login will work")
	}

	b := newBridge(cfg, log)
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	err := b.start(startCtx)
	cancel()
	if err != nil {
		return err
	}
	defer b.close()

	rc, ok := in.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(in)
	}
	// out belongs to the caller (it is the process's standard output), so
	// the transport must not close it.
	err = b.server.Run(ctx, &mcp.IOTransport{Reader: rc, Writer: nopWriteCloser{out}})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bridge forwards one local MCP session to a hosted ctalk server.
type bridge struct {
	cfg    Config
	log    *slog.Logger
	base   http.RoundTripper // shared by every session, for its connection pool
	client *mcp.Client       // to the hosted server
	server *mcp.Server       // on stdio

	mu sync.Mutex
	// session is the connection to the hosted server; nil once it has
	// failed, until the next call reconnects.
	session *remoteSession
	// tools holds the JSON of each tool served, to serve only changes.
	tools map[string]string

	// progress maps the progress token sent to the hosted server with a call
	// to the local session and token that call came with.
	progress    sync.Map
	progressSeq atomic.Uint64
}

// remoteSession is one MCP session with the hosted server and the HTTP
// transport that saw its refusals.
type remoteSession struct {
	cs   *mcp.ClientSession
	http *remoteHTTP
}

type progressTarget struct {
	session *mcp.ServerSession
	token   any
}

func newBridge(cfg Config, log *slog.Logger) *bridge {
	b := &bridge{
		cfg:   cfg,
		log:   log,
		tools: map[string]string{},
	}
	// The default transport's dial and TLS timeouts apply; it has no
	// response-header timeout, which a 120 s wait would trip.
	base := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Dial != nil {
		base.DialContext, base.Proxy = cfg.Dial, nil
	}
	b.base = base
	b.client = mcp.NewClient(&mcp.Implementation{Name: "ctalk-stdio", Version: cfg.Version}, &mcp.ClientOptions{
		Logger:                      quietLogger(log),
		ProgressNotificationHandler: b.relayProgress,
	})
	return b
}

// quietLogger passes on only the SDK's warnings and errors.
func quietLogger(log *slog.Logger) *slog.Logger {
	return slog.New(levelHandler{slog.LevelWarn, log.Handler()})
}

type levelHandler struct {
	min slog.Level
	slog.Handler
}

func (h levelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

// start connects to the hosted server, lists its tools and builds the local
// server that offers them. Its error is one line saying what to check.
func (b *bridge) start(ctx context.Context) error {
	rs, tools, err := b.connect(ctx)
	if err != nil {
		f := err.(*remoteFailure)
		if r := f.tokenRefused(); r != nil {
			return fmt.Errorf("the hosted ctalk server at %s refused the token (%s); check CTALK_TOKEN or --token, and log in again for a new token if it expired or was revoked", b.cfg.Endpoint, r)
		}
		return fmt.Errorf("could not connect to the hosted ctalk server at %s (%s); check --url and that the server is up and reachable from this computer", b.cfg.Endpoint, f.reason())
	}
	init := rs.cs.InitializeResult()
	info := &mcp.Implementation{Name: "ctalk"}
	if init.ServerInfo != nil {
		si := *init.ServerInfo
		info = &si
	}
	b.server = mcp.NewServer(info, &mcp.ServerOptions{
		Instructions: init.Instructions,
		Logger:       quietLogger(b.log),
		// Tools only; the list can change when a reconnect finds the hosted
		// server upgraded.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	b.mu.Lock()
	b.adopt(rs, tools)
	b.mu.Unlock()
	b.log.Info("ctalk stdio: forwarding to the hosted server",
		"url", b.cfg.Endpoint, "server_version", info.Version, "protocol", init.ProtocolVersion, "tools", len(tools))
	return nil
}

// httpClient is a client for the hosted server that sends the token. It has
// no timeout: a forwarded wait lasts up to 120 s, and the local client's
// request context bounds every call.
func (b *bridge) httpClient(rh *remoteHTTP) *http.Client {
	return &http.Client{Transport: rh}
}

// connect opens a session with the hosted server and lists its tools. Its
// error is a *remoteFailure.
func (b *bridge) connect(ctx context.Context) (*remoteSession, []*mcp.Tool, error) {
	since := time.Now()
	rh := &remoteHTTP{token: b.cfg.Token, base: b.base}
	cs, err := mcpclient.Open(ctx, b.cfg.Endpoint, mcpclient.Options{Client: b.client, HTTP: b.httpClient(rh), Era: b.cfg.protocolVersion})
	if err != nil {
		return nil, nil, &remoteFailure{err: err, http: rh, since: since, notSent: true}
	}
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			return nil, nil, &remoteFailure{err: fmt.Errorf("list tools: %w", err), http: rh, since: since, notSent: true}
		}
		tools = append(tools, tool)
	}
	return &remoteSession{cs: cs, http: rh}, tools, nil
}

// adopt makes rs the session calls go through and serves tools, adding,
// replacing and removing only what changed. b.mu must be held.
func (b *bridge) adopt(rs *remoteSession, tools []*mcp.Tool) {
	b.session = rs
	go func() {
		// A session ends when its connection fails for good (a refused
		// token, a session the server forgot); the next call reconnects.
		rs.cs.Wait()
		b.drop(rs)
	}()
	seen := map[string]bool{}
	for _, t := range tools {
		seen[t.Name] = true
		j, _ := json.Marshal(t)
		if b.tools[t.Name] == string(j) {
			continue
		}
		if err := addTool(b.server, t, b.forward); err != nil {
			b.log.Warn("not offering a tool of the hosted server", "tool", t.Name, "error", err)
			continue
		}
		b.tools[t.Name] = string(j)
	}
	var gone []string
	for name := range b.tools {
		if !seen[name] {
			gone = append(gone, name)
			delete(b.tools, name)
		}
	}
	if len(gone) > 0 {
		b.server.RemoveTools(gone...)
	}
}

// addTool serves t. The SDK panics on a tool it finds malformed (an input
// schema that is not an object); one such tool must not stop the bridge.
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// drop forgets rs if calls still go through it, and closes it.
func (b *bridge) drop(rs *remoteSession) {
	b.mu.Lock()
	if b.session == rs {
		b.session = nil
	}
	b.mu.Unlock()
	rs.cs.Close()
}

func (b *bridge) close() {
	b.mu.Lock()
	rs := b.session
	b.session = nil
	b.mu.Unlock()
	if rs != nil {
		rs.cs.Close()
	}
}

// current returns the session to the hosted server, reconnecting (and
// refreshing the tools) if the last one failed.
func (b *bridge) current(ctx context.Context) (*remoteSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.session != nil {
		return b.session, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reconnectTimeout)
	defer cancel()
	rs, tools, err := b.connect(ctx)
	if err != nil {
		return nil, err
	}
	b.log.Info("ctalk stdio: reconnected to the hosted server", "url", b.cfg.Endpoint)
	b.adopt(rs, tools)
	return rs, nil
}

// forward is the handler of every tool: it sends the call to the hosted
// server and returns its result unchanged. A failure to reach the server
// becomes a tool error that says so; a JSON-RPC error from the server is
// passed on as one.
func (b *bridge) forward(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{
		Name:           req.Params.Name,
		InputResponses: req.Params.InputResponses,
		RequestState:   req.Params.RequestState,
	}
	if len(req.Params.Arguments) > 0 {
		params.Arguments = req.Params.Arguments
	}
	for k, v := range req.Params.Meta {
		if k != "progressToken" {
			if params.Meta == nil {
				params.Meta = mcp.Meta{}
			}
			params.Meta[k] = v
		}
	}
	if tok := req.Params.GetProgressToken(); tok != nil {
		// Local tokens are unique only within the local session, so the
		// hosted server gets one of ours, mapped back in relayProgress.
		id := "ctalk-stdio-" + strconv.FormatUint(b.progressSeq.Add(1), 10)
		b.progress.Store(id, progressTarget{req.Session, tok})
		defer b.progress.Delete(id)
		params.SetProgressToken(id)
	}

	res, err := b.call(ctx, params)
	var f *remoteFailure
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &f):
		msg := f.toolError(b.cfg.Endpoint, b.cfg.Token != "")
		b.log.Warn("ctalk stdio: tool call not forwarded", "tool", req.Params.Name, "error", msg)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
	}
	return nil, err
}

// call sends one tool call, reconnecting first if the session had failed.
// Its error is the JSON-RPC error the hosted server answered with, or a
// *remoteFailure.
func (b *bridge) call(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	for attempt := 1; ; attempt++ {
		rs, err := b.current(ctx)
		if err != nil {
			return nil, err
		}
		since := time.Now()
		res, err := rs.cs.CallTool(ctx, params)
		if attempt == 1 && errors.Is(err, mcp.ErrSessionMissing) {
			// The server forgot the session (it restarted) and so did not
			// run the call: send it again on a new session.
			b.drop(rs)
			continue
		}
		if err == nil {
			return res, nil
		}
		if rpcErr := answered(err); rpcErr != nil {
			return nil, rpcErr
		}
		return nil, &remoteFailure{err: err, http: rs.http, since: since, notSent: isDialError(err)}
	}
}

// relayProgress passes a progress notification from the hosted server to the
// local call it belongs to.
func (b *bridge) relayProgress(ctx context.Context, n *mcp.ProgressNotificationClientRequest) {
	id, _ := n.Params.ProgressToken.(string)
	v, ok := b.progress.Load(id)
	if !ok {
		return
	}
	t := v.(progressTarget)
	p := *n.Params
	p.ProgressToken = t.token
	if err := t.session.NotifyProgress(ctx, &p); err != nil {
		b.log.Debug("ctalk stdio: progress notification not relayed", "error", err)
	}
}
