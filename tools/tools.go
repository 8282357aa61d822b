package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/audit"
	"github.com/ctalk/ctalk/auth"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/internal/reqctx"
	"github.com/ctalk/ctalk/wait"
)

type ctxKey int

// callKey carries a tool call's *call in its context.
const callKey ctxKey = 0

// call is what one tool call learns about itself, for its log line.
type call struct {
	tool   string
	orgID  string
	userID string
	req    *mcp.CallToolRequest
	// cred is the credential of the auth_token argument, when the call was
	// identified by it (see identify).
	cred *wait.Credential
	// ids are the message and user ids the call touched, for the audit log.
	ids []string
	// factor is how the caller proved who they are (see audit.Event).
	factor string
}

// touch records ids a tool call touched, for the audit log. Callers pass
// ids the call resolved (a user found, a question stored), not arguments as
// given: a password given as user_id can look like an id. As a last guard,
// only well-formed message, user or org ids are kept, so that a token never
// is.
func touch(ctx context.Context, ids ...string) {
	if c, ok := ctx.Value(callKey).(*call); ok {
		for _, id := range ids {
			if inbox.IsMessageID(id) || ctalk.IsID(id) {
				c.ids = append(c.ids, id)
			}
		}
	}
}

// annotations states truthfully what a tool does to the world.
func annotations(readOnly, destructive, idempotent bool) mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(readOnly),
		DestructiveHint: mcp.ToBoolPtr(destructive),
		IdempotentHint:  mcp.ToBoolPtr(idempotent),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// toolTraits are what the server knows of a tool beyond its schema. Each
// tool declares them once, by the function that registers it: addTool,
// addIdentifiedTool, addAdminTool or addPasswordTool.
type toolTraits struct {
	// identified tools run only for an identified caller.
	identified bool
	// admin tools run only for an admin of the org they name, by token or
	// by the org's admin password.
	admin bool
	// checksPassword tools check a password (a login or an org's admin
	// password): their refusals count as login failures in the metrics.
	checksPassword bool
	// toolset is the optional toolset the tool belongs to (see
	// Toolsets), or "" for the tools every caller may be offered.
	toolset string
	// app tools are the decision card's own (see registerCard): offered
	// only to clients that render MCP Apps, and hidden there from the
	// model by their _meta.ui.visibility.
	app bool
	// card tools' results are shown in the decision card by clients that
	// render MCP Apps, whose lists name the card in the tool's _meta.
	card bool
}

// addTool registers a tool whose arguments decode into In and whose result is
// Out. Decoding errors, domain errors and panics all become tool errors with
// a message that says what to do; the text content is a JSON copy of Out.
func addTool[In, Out any](s *Server, t mcp.Tool, fn func(ctx context.Context, in *In) (*Out, error)) {
	addToolWith(s, t, toolTraits{}, fn)
}

// addPasswordTool registers a tool, as addTool does, that checks a password
// itself.
func addPasswordTool[In, Out any](s *Server, t mcp.Tool, fn func(ctx context.Context, in *In) (*Out, error)) {
	addToolWith(s, t, toolTraits{checksPassword: true}, fn)
}

// addIdentifiedTool registers a tool that needs the caller's identity: its
// handler runs only for an identified caller, whose session it receives.
func addIdentifiedTool[In hasToken, Out any](s *Server, t mcp.Tool, fn func(ctx context.Context, sess *auth.Session, in *In) (*Out, error)) {
	addToolWith(s, t, toolTraits{identified: true}, func(ctx context.Context, in *In) (*Out, error) {
		sess, err := s.identify(ctx, *in)
		if err != nil {
			return nil, err
		}
		return fn(ctalk.WithOrg(ctx, sess.OrgID), sess, in)
	})
}

// addAdminTool registers a tool that administers an org: its handler runs
// only once the caller is authorized as an admin of the org its arguments
// name (see authorizeAdmin), and receives that org's normalized id.
func addAdminTool[In adminRequest, Out any](s *Server, t mcp.Tool, fn func(ctx context.Context, orgID string, in *In) (*Out, error)) {
	addToolWith(s, t, toolTraits{admin: true, checksPassword: true}, func(ctx context.Context, in *In) (*Out, error) {
		orgID, password := (*in).adminCredentials()
		orgID, err := s.authorizeAdmin(ctalk.WithTypedOrg(ctx, orgID), *in, orgID, password)
		if err != nil {
			return nil, err
		}
		return fn(ctalk.WithOrg(ctx, orgID), orgID, in)
	})
}

// addToolWith registers a tool with its traits; the add*Tool functions
// above are its only callers, so that a tool's traits and its handler's
// checks cannot disagree.
func addToolWith[In, Out any](s *Server, t mcp.Tool, traits toolTraits, fn func(ctx context.Context, in *In) (*Out, error)) {
	if s.tools == nil {
		s.tools = map[string]toolTraits{}
	}
	s.tools[t.Name] = traits
	mcp.WithCachedOutputSchema[Out](outputSchemas)(&t)
	s.mcp.AddTool(t, func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		start := time.Now()
		info := &call{tool: t.Name, req: &req}
		ctx = context.WithValue(ctx, callKey, info)
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic in tool %s: %v", t.Name, r)
				res = s.toolError(ctx, err)
			}
			s.logCall(ctx, info, err, time.Since(start))
		}()

		in := new(In)
		if err = decodeArgs(req.GetRawArguments(), in, t.InputSchema.Required); err != nil {
			return s.toolError(ctx, err), nil
		}
		var out *Out
		if out, err = fn(ctx, in); err != nil {
			if ir := (*inputRequired)(nil); errors.As(err, &ir) {
				// Logged and audited as the refusal it stands for.
				return ir.res, nil
			}
			return s.toolError(ctx, err), nil
		}
		if res, err = structured(out); err != nil {
			return s.toolError(ctx, err), nil
		}
		return res, nil
	})
}

// outputSchemas holds each result type's output schema, worked out once
// per process: mcp-go builds it by reflection and a JSON round trip, which
// was most of what starting a server cost (a test starts hundreds).
var outputSchemas = mcp.NewSchemaCache()

// structured returns out as a tool result: one JSON encoding serves as both
// the structured content and its text copy, instead of mcp-go encoding out
// a second time when it writes the response.
func structured(out any) (*mcp.CallToolResult, error) {
	text, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode the result: %w", err)
	}
	res := mcp.NewToolResultText(string(text))
	res.RawStructuredContent = text
	return res, nil
}

// decodeArgs decodes tool arguments strictly: unknown arguments, wrong types
// and missing or null required arguments are refused with the argument's name.
func decodeArgs(raw any, dst any, required []string) error {
	var b []byte
	switch r := raw.(type) {
	case nil:
		b = []byte("{}")
	case json.RawMessage:
		b = r
	default:
		var err error
		if b, err = json.Marshal(r); err != nil {
			return ctalk.Errorf(ctalk.EInvalid, "the arguments are not a JSON object")
		}
	}
	if t := bytes.TrimSpace(b); bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
		// No arguments: dst stays as decoding "{}" would leave it, and
		// only a required one can be wrong.
		return missingArg(nil, required)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		return missingArg(b, required)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return ctalk.Errorf(ctalk.EInvalid, "the arguments must be a JSON object, not %s", jsonKind(te.Value))
		}
		// The path names embedded Go structs ("tokenArg.auth_token"); the
		// caller knows the argument by its last part.
		name := te.Field[strings.LastIndex(te.Field, ".")+1:]
		return ctalk.Errorf(ctalk.EInvalid, "argument %q must be %s, not %s", name, goKind(te.Type.Kind().String()), jsonKind(te.Value))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return ctalk.Errorf(ctalk.EInvalid, "unknown argument %s; see the tool's input schema for the arguments it takes", name)
	}
	var ae *argError
	if errors.As(err, &ae) {
		return ae.err
	}
	return ctalk.Errorf(ctalk.EInvalid, "the arguments are not valid JSON: %v", err)
}

// missingArg refuses arguments that lack a required one. Without it, an
// omitted field would decode as empty and, for example, erase notes.
func missingArg(b []byte, required []string) error {
	if len(required) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	json.Unmarshal(b, &args)
	for _, name := range required {
		if v, ok := args[name]; !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return ctalk.Errorf(ctalk.EInvalid, "argument %q is required; see the tool's input schema", name)
		}
	}
	return nil
}

// argError lets a custom UnmarshalJSON return a coded error through the
// json decoder.
type argError struct{ err error }

func (e *argError) Error() string { return e.err.Error() }

func jsonKind(v string) string {
	switch v {
	case "number", "bool", "string":
		return "a " + v
	case "array", "object":
		return "an " + v
	}
	return v
}

func goKind(k string) string {
	switch {
	case k == "string":
		return "a string"
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"), strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool":
		return "true or false"
	case k == "slice":
		return "a list"
	case k == "struct", k == "map":
		return "an object"
	}
	return "of another type"
}

// toolError turns an error into a tool result with isError set. Uncoded
// errors are logged in full and shown only as "internal error" with the
// request id.
func (s *Server) toolError(ctx context.Context, err error) *mcp.CallToolResult {
	code := ctalk.ErrorCode(err)
	msg := ctalk.ErrorMessage(err)
	switch {
	case cancelled(ctx, err):
		msg = "the call was cancelled or timed out before it finished; retry it"
	case code == ctalk.EInternal:
		s.log.Error("tool call failed", "request_id", requestID(ctx), "error", err)
		msg = fmt.Sprintf("internal error (request id %s); retry, and report it if it persists", requestID(ctx))
	}
	return mcp.NewToolResultError(strings.ReplaceAll(string(code), "_", " ") + ": " + msg)
}

// outcomeCancelled is the outcome of a call whose caller cancelled it or
// disconnected before it finished.
const outcomeCancelled = "cancelled"

// cancelled reports whether a call failed because its caller went away. The
// driver's error does not always say so (SQLite reports an interrupted
// statement), so the call's own context decides too.
func cancelled(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

// logCall writes one line per tool call: who, which tool, the outcome and
// how long it took. Arguments are never logged.
func (s *Server) logCall(ctx context.Context, c *call, err error, d time.Duration) {
	outcome := "ok"
	switch {
	case cancelled(ctx, err):
		// The caller went away; nothing failed on this side.
		outcome = outcomeCancelled
	case err != nil:
		outcome = string(ctalk.ErrorCode(err))
	}
	s.metrics.observe(c.tool, outcome, s.tools[c.tool], d.Seconds())
	if s.cfg.Audit != nil {
		s.cfg.Audit.Record(audit.Event{
			At: time.Now().UTC().Add(-d), OrgID: c.orgID, UserID: c.userID, Tool: c.tool,
			Outcome: outcome, DurationMS: float64(d.Microseconds()) / 1000, IDs: c.ids, RequestID: requestID(ctx),
			Factor: c.factor,
		})
	}
	level := slog.LevelInfo
	if outcome == string(ctalk.EInternal) {
		level = slog.LevelError
	}
	// This line stands for the HTTP request's line too (see requestContext).
	reqctx.MarkLogged(ctx)
	client := clientIP(ctx)
	s.log.LogAttrs(ctx, level, "tool call",
		slog.String("request_id", requestID(ctx)),
		slog.String("client", client),
		slog.String("tool", c.tool),
		slog.String("org_id", c.orgID),
		slog.String("user_id", c.userID),
		slog.String("outcome", outcome),
		slog.Duration("duration", d),
	)
}

// identify returns the caller's session: from the Authorization header when
// one was sent (already checked by the bearer middleware), else from the
// auth_token argument.
//
// Returns EUnauthorized when there is neither or the token is not valid,
// EInvalid when the header and the argument carry different tokens.
func (s *Server) identify(ctx context.Context, in hasToken) (*auth.Session, error) {
	if err := reqctx.AuthError(ctx); err != nil {
		return nil, err
	}
	sess := reqctx.Session(ctx)
	if sess != nil && in.token() != "" && auth.HashToken(strings.TrimSpace(in.token())) != sess.TokenHash {
		// Acting as either one would be a guess about which person the
		// caller means.
		return nil, ctalk.Errorf(ctalk.EInvalid, "this call carries two different tokens, one in the Authorization header and another as auth_token; drop the auth_token argument to act as the header's user (preferred), or drop the header to act as the argument's")
	}
	if sess == nil && in.token() != "" {
		raw := strings.TrimSpace(in.token())
		seen := s.broker().Revocations()
		var err error
		if sess, err = s.Authenticate(ctx, raw); err != nil {
			return nil, err
		}
		if c, ok := ctx.Value(callKey).(*call); ok {
			c.cred = s.Credential(ctx, raw, sess, seen)
		}
	}
	if sess == nil {
		return nil, ctalk.Errorf(ctalk.EUnauthorized, "this tool needs you to be logged in: send the header \"Authorization: Bearer <token>\" (or pass auth_token); get a token with the login tool")
	}
	setCaller(ctx, sess)
	s.presence.Seen(sess.Caller())
	return sess, nil
}

// setCaller records who makes the call, for its log line and audit event.
func setCaller(ctx context.Context, sess *auth.Session) {
	if c, ok := ctx.Value(callKey).(*call); ok && sess != nil {
		c.orgID, c.userID, c.factor = sess.OrgID, sess.UserID, factorOf(sess)
	}
}

// optionalSession returns the header session, or the auth_token one, or nil
// when the caller sent neither.
func (s *Server) optionalSession(ctx context.Context, in hasToken) (*auth.Session, error) {
	if reqctx.Session(ctx) == nil && reqctx.AuthError(ctx) == nil && in.token() == "" {
		return nil, nil
	}
	return s.identify(ctx, in)
}

// recordAttempt files a refused password check under the org and account it
// was aimed at, so that the org's admins see failed logins and lockouts in
// their audit log. Only well-formed ids of an existing org are recorded;
// the password never is.
func (s *Server) recordAttempt(ctx context.Context, orgID, userID string, err error) {
	if code := ctalk.ErrorCode(err); code != ctalk.EUnauthorized && code != ctalk.ERateLimited {
		return
	}
	c, ok := ctx.Value(callKey).(*call)
	if !ok {
		return
	}
	orgID, perr := ctalk.ParseID("org_id", orgID)
	if perr != nil {
		return
	}
	if userID != adminPasswordCaller {
		if userID, perr = ctalk.ParseID("user_id", userID); perr != nil {
			return
		}
	}
	if _, err := s.orgs.Org(ctalk.WithOrg(ctx, orgID), orgID); err != nil {
		return
	}
	c.orgID, c.userID = orgID, userID
}
