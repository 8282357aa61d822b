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
// inbox.DepartedReason; it returns how many it declined. A member removed
// already, by another call racing this one or before, is not an error: the
// questions still waiting for them are declined all the same. The caller
// must have been authorized for orgID.
//
// Returns EInvalid for a malformed id, ENotFound when userID never belonged
// to orgID, EConflict for the org's last admin.
func (d *Departures) Leave(ctx context.Context, orgID, userID string) (int, error) {
	if _, err := d.orgs.RemoveUser(ctx, orgID, userID); err != nil {
		if ctalk.ErrorCode(err) != ctalk.ENotFound {
			return 0, err
		}
		userID, _ = ctalk.ParseID("user_id", userID)
		former, ferr := d.orgs.Former(ctx, orgID, userID)
		if ferr != nil {
			return 0, ferr
		}
		if !former {
			return 0, err
		}
	}
	return d.inbox.DeclineForDeparted(ctx, orgID, userID)
}
