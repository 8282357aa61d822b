package ctalk

import (
	"context"
	"log/slog"
)

// scope is whose rows a context's statements may see on Postgres when
// row-level security is in force: one organization's, or every
// organization's for the operator's work that crosses them.
type scope struct {
	org string
	// operator, when set, says why statements may cross organizations.
	operator string
}

type scopeKey struct{}

// WithOrg returns ctx scoped to orgID: on Postgres with row-level security
// in force (see db.DB.RLS), every statement run with it sees and writes
// the rows of orgID only, whatever its WHERE clause says. It is set where
// a request's caller becomes known (a bearer token, a browser session, a
// SCIM token, a verified Slack payload, an org id typed with a password),
// and replaces an operator scope ctx had.
//
// It lives here, beside Caller, rather than in package db, so that the
// front doors that may not import db (the tools) can set it.
func WithOrg(ctx context.Context, orgID string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope{org: orgID})
}

// AsOperator returns ctx scoped to every organization, for the operator's
// work that crosses them (the notification worker, pruning, an org's
// deletion, a credential looked up by its hash before its org is known).
// why names the work, in words that read well in a log: it is logged at
// debug level here, and package db counts the transactions run in it by
// why (ctalk_db_operator_transactions_total), so that every statement
// that may cross organizations is one grep for AsOperator away.
func AsOperator(ctx context.Context, why string) context.Context {
	slog.Debug("operator scope", "why", why)
	return context.WithValue(ctx, scopeKey{}, scope{operator: why})
}

// WithTypedOrg is WithOrg for an org id a person or agent typed beside a
// password (a sign-in, an admin password), normalized as ParseID does. An
// id that does not parse scopes to no org, and the check that follows says
// what is wrong with it.
func WithTypedOrg(ctx context.Context, typed string) context.Context {
	id, err := ParseID("org_id", typed)
	if err != nil {
		id = ""
	}
	return WithOrg(ctx, id)
}

// ScopeOf returns the organization ctx is scoped to by WithOrg, or why it
// is in the operator's scope by AsOperator; both empty when ctx has no
// scope, which on Postgres under row-level security sees no row.
func ScopeOf(ctx context.Context) (orgID, operator string) {
	s, _ := ctx.Value(scopeKey{}).(scope)
	return s.org, s.operator
}
