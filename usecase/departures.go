package usecase

import (
	"context"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/inbox"
	"github.com/ctalk/ctalk/orgs"
)

// Departures is how a member leaves an organization: removed, so that every
// credential of theirs ends at once on every replica, with what it holds
// open, and the questions still waiting for them declined to their askers.
type Departures struct {
	orgs  *orgs.Service
	inbox *inbox.Service
}

// NewDepartures returns the departures over o and in.
func NewDepartures(o *orgs.Service, in *inbox.Service) *Departures {
	return &Departures{orgs: o, inbox: in}
}

// Leave removes userID from orgID (see orgs.Service.RemoveUser) and
// declines every question still waiting for them with
// inbox.DepartedReason; it returns the removal and how many questions it
// declined. A member removed already, by another call racing this one or
// before, is not an error: the removal is nil and the questions still
// waiting for them are declined all the same. The caller must have been
// authorized for orgID.
//
// Returns EInvalid for a malformed id, ENotFound when userID never belonged
// to orgID, EConflict for the org's last admin.
func (d *Departures) Leave(ctx context.Context, orgID, userID string) (*orgs.Removal, int, error) {
	r, err := d.orgs.RemoveUser(ctx, orgID, userID)
	if err != nil {
		if ctalk.ErrorCode(err) != ctalk.ENotFound {
			return nil, 0, err
		}
		userID, _ = ctalk.ParseID("user_id", userID)
		former, ferr := d.orgs.Former(ctx, orgID, userID)
		if ferr != nil {
			return nil, 0, ferr
		}
		if !former {
			return nil, 0, err
		}
	} else {
		userID = r.UserID
	}
	n, err := d.inbox.DeclineForDeparted(ctx, orgID, userID)
	return r, n, err
}

// Erase removes userID from orgID, or takes a member removed already, and
// erases their account and profile (see orgs.Service.EraseUser); the
// questions still waiting for them are declined as Leave declines them.
//
// Returns EInvalid for a malformed id, ENotFound when userID never belonged
// to orgID, EConflict for the org's last admin.
func (d *Departures) Erase(ctx context.Context, orgID, userID string) (*orgs.Removal, int, error) {
	r, err := d.orgs.EraseUser(ctx, orgID, userID)
	if err != nil {
		return nil, 0, err
	}
	n, err := d.inbox.DeclineForDeparted(ctx, orgID, r.UserID)
	return r, n, err
}
