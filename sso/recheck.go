package sso

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ctalk/ctalk"
	"github.com/ctalk/ctalk/db"
)

// DomainRecheck is how long a verified domain's TXT record is trusted
// before it is looked up again.
const DomainRecheck = 24 * time.Hour

// recheckBatch bounds the domains one pass of RecheckDomains looks up.
const recheckBatch = 100

// Lapsed is a verified domain whose TXT record was no longer found.
type Lapsed struct {
	OrgID, DomainID, Domain string
}

// RecheckDomains looks up again the TXT record of each verified domain,
// of every org, found last more than DomainRecheck before now, the oldest
// first and at most recheckBatch of them. A domain whose record is gone or
// holds another value goes back to pending: its addresses no longer reach
// the org's provider, nor link or make members, until an admin verifies
// it again. A domain whose DNS does not answer stays verified and is
// looked up at the next pass. Replicas that run it at once look a domain
// up twice and change it once. It returns the domains sent back to
// pending.
//
// Returns only the database's errors.
func (s *Service) RecheckDomains(ctx context.Context) ([]Lapsed, error) {
	// Across orgs: the domains due are every org's.
	ctx = ctalk.AsOperator(ctx, "SSO domain re-check")
	type due struct {
		orgID string
		d     Domain
	}
	var list []due
	err := db.Each(ctx, s.db, func(r *db.Rows) error {
		var x due
		if err := r.Scan(&x.orgID, &x.d.ID, &x.d.Name, &x.d.Token); err != nil {
			return err
		}
		list = append(list, x)
		return nil
	}, `SELECT org_id, id, domain, token FROM sso_domains WHERE verified_at IS NOT NULL AND COALESCE(checked_at, verified_at) < $1
		ORDER BY COALESCE(checked_at, verified_at) LIMIT $2`, s.db.Now().Add(-DomainRecheck), recheckBatch)
	if err != nil {
		return nil, fmt.Errorf("read sso_domains: %w", err)
	}
	var lapsed []Lapsed
	for _, x := range list {
		gone, err := s.recheck(ctx, x.orgID, &x.d)
		if err != nil {
			return lapsed, err
		}
		if gone {
			lapsed = append(lapsed, Lapsed{OrgID: x.orgID, DomainID: x.d.ID, Domain: x.d.Name})
		}
	}
	return lapsed, nil
}

// recheck looks d, a verified domain of orgID, up again and records what
// it found; it reports whether d went back to pending.
func (s *Service) recheck(ctx context.Context, orgID string, d *Domain) (bool, error) {
	switch ctalk.ErrorCode(s.findRecord(ctx, d)) {
	case ctalk.EUnavailable:
		return false, nil
	case "":
		return false, s.db.Tx(ctx, func(tx db.Querier) error {
			if _, err := tx.Exec(ctx, `UPDATE sso_domains SET checked_at = $1 WHERE org_id = $2 AND id = $3 AND verified_at IS NOT NULL`, s.db.Now(), orgID, d.ID); err != nil {
				return fmt.Errorf("update sso_domains: %w", err)
			}
			return nil
		})
	}
	var n int64
	err := s.db.Tx(ctx, func(tx db.Querier) error {
		res, err := tx.Exec(ctx, `UPDATE sso_domains SET verified_at = NULL, verified_by = '', checked_at = NULL WHERE org_id = $1 AND id = $2 AND verified_at IS NOT NULL`, orgID, d.ID)
		if err != nil {
			return fmt.Errorf("update sso_domains: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n > 0, err
}

// RecheckDomainsEvery runs RecheckDomains at once and then every
// Config.RecheckEvery until ctx ends, calling lapsed with each domain sent
// back to pending (for the org's audit log).
func (s *Service) RecheckDomainsEvery(ctx context.Context, lapsed func(Lapsed), log *slog.Logger) {
	t := time.NewTicker(s.cfg.RecheckEvery)
	defer t.Stop()
	for {
		gone, err := s.RecheckDomains(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("SSO domain re-check failed", "error", err)
		}
		for _, l := range gone {
			lapsed(l)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
