package usecase

import (
	"context"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
)

// Departures is how a member leaves an organization: removed, so that every
// credential of theirs ends at once on every replica, with what it holds
// open, and the questions still waiting for them declined to their askers
// or, where the org's departure_questions is delegate, handed to their away
// delegate. The SCIM provider, the web app and the remove_user tool all
// go through it.
type Departures struct {
	orgs  *orgs.Service
	inbox *inbox.Service
}

// NewDepartures returns the departures over o and in.
func NewDepartures(o *orgs.Service, in *inbox.Service) *Departures {
	return &Departures{orgs: o, inbox: in}
}

// Leave removes userID from orgID (see orgs.Service.RemoveUser) and hands
// over every question still waiting for them (see handOver); it returns the
// removal and what became of the questions. A member removed already, by
// another call racing this one or before, is not an error: the removal is
// nil and the questions still waiting for them are handed over all the
// same. The caller must have been authorized for orgID.
//
// Returns EInvalid for a malformed id, ENotFound when userID never belonged
// to orgID, EConflict for the org's last admin.
func (d *Departures) Leave(ctx context.Context, orgID, userID string) (*orgs.Removal, inbox.Departed, error) {
	delegate, err := d.delegate(ctx, orgID, userID)
	if err != nil {
		return nil, inbox.Departed{}, err
	}
	r, err := d.orgs.RemoveUser(ctx, orgID, userID)
	if err != nil {
		if ctalk.ErrorCode(err) != ctalk.ENotFound {
			return nil, inbox.Departed{}, err
		}
		userID, _ = ctalk.ParseID("user_id", userID)
		former, ferr := d.orgs.Former(ctx, orgID, userID)
		if ferr != nil {
			return nil, inbox.Departed{}, ferr
		}
		if !former {
			return nil, inbox.Departed{}, err
		}
	} else {
		userID = r.UserID
	}
	out, err := d.inbox.HandOverForDeparted(ctx, orgID, userID, delegate)
	return r, out, err
}

// Erase removes userID from orgID, or takes a member removed already, and
// erases their account and profile (see orgs.Service.EraseUser); the
// questions still waiting for them are handed over as Leave hands them.
//
// Returns EInvalid for a malformed id, ENotFound when userID never belonged
// to orgID, EConflict for the org's last admin.
func (d *Departures) Erase(ctx context.Context, orgID, userID string) (*orgs.Removal, inbox.Departed, error) {
	// Read before the erasure, which clears the away status.
	delegate, err := d.delegate(ctx, orgID, userID)
	if err != nil {
		return nil, inbox.Departed{}, err
	}
	r, err := d.orgs.EraseUser(ctx, orgID, userID)
	if err != nil {
		return nil, inbox.Departed{}, err
	}
	out, err := d.inbox.HandOverForDeparted(ctx, orgID, r.UserID, delegate)
	return r, out, err
}

// delegate is whom the questions waiting for userID go to when they leave
// orgID: their away delegate where the org's departure_questions is
// delegate, else nobody (""), and they are declined. Whether the delegate
// is still a member is checked as each question moves.
func (d *Departures) delegate(ctx context.Context, orgID, userID string) (string, error) {
	o, err := d.orgs.Org(ctx, orgID)
	if err != nil || o.DepartureQuestions != orgs.DepartureDelegate {
		return "", err
	}
	id, err := ctalk.ParseID("user_id", userID)
	if err != nil {
		return "", err
	}
	delegate, err := d.orgs.AwayDelegate(ctx, orgID, id)
	if ctalk.ErrorCode(err) == ctalk.ENotFound {
		// Never a member: the removal says so.
		return "", nil
	}
	return delegate, err
}
